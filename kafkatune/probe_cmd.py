"""`kafkatune probe`: measure a cluster's ceilings (links and disks) into its profile."""

from __future__ import annotations

import json
from pathlib import Path

import click

from advisor import ceiling
from cluster.probe import probe_disk
from cluster.remote_probe import probe_inventory
from core.errors import EnvironmentProblem
from kafkatune.options import inventory_options, say, testbed
from records.profile import ClusterProfile
from testbed import profile as profiles


def _print_profile(profile: ClusterProfile, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(profile.to_json(), indent=2))
        return
    c = ceiling.from_profile(profile)
    click.echo(
        f"ceiling (RF 3, 1 consumer group): {c.mb_s:.2f} MB/s, bound by {c.binding}"
        if c
        else "no network ceiling is known (unshaped loopback testbed)"
    )


@click.command("probe")
@click.option("--state-dir", type=click.Path(path_type=Path), default=None, help="Testbed state folder.")
@click.option(
    "--log-dir",
    "log_dirs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Probe these dirs instead of the testbed's log dirs (repeatable; all are written at once). "
    "Prints the result; nothing is written to a profile.",
)
@click.option("--segment-mb", type=click.IntRange(min=1), default=256, show_default=True, help="File size, MiB.")
@click.option("--files", type=click.IntRange(min=1), default=2, show_default=True, help="Files per log dir.")
@click.option("--no-network", is_flag=True, help="Keep the profile's network figures; only probe the disk.")
@inventory_options(
    "Probe a cluster over SSH instead of the testbed: the disk of every broker's log dirs (a probe "
    "script copied there) and the rate between hosts (iperf3 where installed, else the script)."
)
@click.option(
    "--net-tool",
    type=click.Choice(["auto", "iperf3", "python"]),
    default="auto",
    show_default=True,
    help="With --inventory: the network probe (auto: iperf3 when both hosts have it).",
)
@click.option("--seconds", type=click.FloatRange(min=0.5), default=3.0, show_default=True, help="Per host pair.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="With --inventory: the profile file (default: profiles/<inventory name>.json in kafkatune's home, "
    "where sweeps of that inventory read it).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the profile (or the disk probe) as JSON.")
def command(
    state_dir: Path | None,
    log_dirs: tuple[Path, ...],
    segment_mb: int,
    files: int,
    no_network: bool,
    inventory: Path | None,
    net_tool: str,
    seconds: float,
    out: Path | None,
    accept_new_host_keys: bool,
    as_json: bool,
) -> None:
    """Measure the real ceilings: host-to-host NIC rate (iperf3 between the testbed's namespaces, when
    shaped) and disk write bandwidth in the broker log dirs (segment-sized sequential files, with and
    without fsync, all log dirs at once), into the testbed's cluster profile. Sweeps and benches record
    the profile they ran against; `kafkatune ceiling` turns it into a limit.

    With --inventory the same probes run on a cluster's own hosts over SSH."""
    if inventory is not None:
        profile, dest = probe_inventory(
            inventory,
            tool=net_tool,  # type: ignore[arg-type]
            seconds=seconds,
            segment_mb=segment_mb,
            files=files,
            out=out,
            accept_new_host_keys=accept_new_host_keys,
            progress=say,
        )
        say(f"profile written: {dest}")
        _print_profile(profile, as_json)
        return
    if log_dirs:
        d = probe_disk(list(log_dirs), segment_mb=segment_mb, files=files)
        if as_json:
            click.echo(json.dumps(d.as_profile(), indent=2))
        else:
            click.echo(
                f"disk: {d.write_mb_s_measured:g} MB/s per dir with fsync, {d.write_mb_s_total:g} MB/s together, "
                f"{d.write_mb_s_buffered:g} MB/s buffered; {d.fsync_per_s:g} fsyncs/s "
                f"(p50 {d.fsync_ms_p50:g} ms) in {d.seconds:g} s"
            )
        return
    tb = testbed(state_dir)
    if not tb.state_file.exists():
        raise EnvironmentProblem(f"no testbed in {tb.state_dir}: `kafkatune testbed up` (or pass --log-dir)")
    st = tb.state()
    profile = profiles.measure(
        tb.state_dir,
        st,
        tb.network(st),
        say,
        disk_segment_mb=segment_mb,
        disk_files=files,
        measure_network=not no_network,
        jvm=tb.jvm_options,
    )
    say(f"profile written: {tb.profile_file}")
    _print_profile(profile, as_json)
