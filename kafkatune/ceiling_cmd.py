"""`kafkatune probe` (measure a cluster's ceilings) and `kafkatune ceiling` (the model, for any shape)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from core import paths
from core.errors import EnvironmentProblem
from kafkatune.hosts_cmd import inventory_options


def _say(msg: str) -> None:
    click.echo(msg, err=True)


def _probe_inventory(
    inventory: Path, tool: str, seconds: float, segment_mb: int, files: int, out: Path | None, accept: bool
) -> dict[str, Any]:
    from cluster.inventory import load_inventory
    from cluster.remote_probe import RemoteProber
    from cluster.ssh import SshPool
    from records.profile import inventory_profile_path, write_profile

    inv = load_inventory(inventory)
    with SshPool(accept_new_host_keys=accept, progress=_say) as pool:
        prober = RemoteProber(inv, pool, _say)
        try:
            measured = prober.profile(seconds=seconds, tool=tool, segment_mb=segment_mb, files=files)  # type: ignore[arg-type]
        finally:
            prober.cleanup()
    dest = out or inventory_profile_path(inv.name)
    profile = write_profile(dest, measured)
    _say(f"profile written: {dest}")
    return profile


def _print_profile(profile: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(profile, indent=2))
        return
    from advisor import ceiling

    c = ceiling.from_profile(profile)
    click.echo(
        f"ceiling (RF 3, 1 consumer group): {c.mb_s:.2f} MB/s, bound by {c.binding}"
        if c
        else "no network ceiling is known (unshaped loopback testbed)"
    )


def register(cli: click.Group) -> None:
    @cli.command("probe")
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
    def probe_cmd(
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
            profile = _probe_inventory(inventory, net_tool, seconds, segment_mb, files, out, accept_new_host_keys)
            _print_profile(profile, as_json)
            return
        if log_dirs:
            from cluster.probe import probe_disk

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
        from testbed.dist import default_dist
        from testbed.lifecycle import Testbed

        tb = Testbed(state_dir or paths.state_dir(), default_dist())
        if not tb.state_file.exists():
            raise EnvironmentProblem(f"no testbed in {tb.state_dir}: `kafkatune testbed up` (or pass --log-dir)")
        profile = tb.write_profile(
            tb.state(), progress=_say, disk_segment_mb=segment_mb, disk_files=files, measure_network=not no_network
        )
        _say(f"profile written: {tb.profile_file}")
        _print_profile(profile, as_json)

    @cli.command("ceiling")
    @click.option("--brokers", type=int, required=True, help="Number of brokers N.")
    @click.option("--rf", type=int, default=3, show_default=True, help="Replication factor r.")
    @click.option(
        "--consumer-groups", type=int, default=1, show_default=True, help="Consumer groups C reading the tail."
    )
    @click.option("--nic-mbps", type=float, default=None, help="Per-broker NIC, MB/s each direction.")
    @click.option(
        "--nic-in-mbps", type=float, default=None, help="Per-broker inbound NIC, MB/s (overrides --nic-mbps)."
    )
    @click.option("--nic-out-mbps", type=float, default=None, help="Per-broker outbound NIC, MB/s.")
    @click.option("--disk-mbps", type=float, default=None, help="Per-broker disk write bandwidth, MB/s.")
    @click.option("--producer-hosts", type=int, default=None, help="Hosts running the producers.")
    @click.option("--consumer-hosts", type=int, default=None, help="Hosts running the consumers.")
    @click.option(
        "--client-nic-mbps", type=float, default=None, help="NIC of each client host, MB/s (default --nic-mbps)."
    )
    @click.option(
        "--compression-ratio",
        type=float,
        default=1.0,
        show_default=True,
        help="Compressed ÷ uncompressed bytes; limits are then in uncompressed MB/s.",
    )
    @click.option("--acks", type=click.Choice(["0", "1", "all", "-1"]), default="all", show_default=True)
    @click.option("--json", "as_json", is_flag=True, help='Print {"ceiling_mb_s", "bound", "limits"} as JSON.')
    def ceiling_cmd(
        brokers: int,
        rf: int,
        consumer_groups: int,
        nic_mbps: float | None,
        nic_in_mbps: float | None,
        nic_out_mbps: float | None,
        disk_mbps: float | None,
        producer_hosts: int | None,
        consumer_hosts: int | None,
        client_nic_mbps: float | None,
        compression_ratio: float,
        acks: str,
        as_json: bool,
    ) -> None:
        """The highest producer rate P (MB/s) a cluster shape allows, and the resource that binds it:

        \b
          P_max = min( B_in·N/r , B_out·N/(r−1+C) , D·N/r , client hosts' NICs )

        Example (docs/reference.md §1): --brokers 3 --rf 3 --nic-mbps 1170 --disk-mbps 1200 → 1170 MB/s, network."""
        from advisor import ceiling

        c = ceiling.p_max(
            nic_mbps,
            brokers=brokers,
            rf=rf,
            consumer_groups=consumer_groups,
            nic_in_mb_s=nic_in_mbps,
            nic_out_mb_s=nic_out_mbps,
            disk_mb_s=disk_mbps,
            producer_hosts=producer_hosts,
            consumer_hosts=consumer_hosts,
            client_nic_mb_s=client_nic_mbps,
            compression_ratio=compression_ratio,
            acks=acks,
        )
        if as_json:
            click.echo(json.dumps(c.as_json(), indent=2))
            return
        click.echo(f"ceiling: {c.mb_s:,.1f} MB/s of producer payload, bound by {c.binding}")
        for k, v in sorted(c.terms.items(), key=lambda kv: kv[1]):
            click.echo(f"  {k:<15} {v:>12,.1f} MB/s{'   ← binds' if k == c.binding else ''}")
        pb = c.per_broker
        click.echo(f"each broker at the ceiling: in {pb['in']:,.1f}, out {pb['out']:,.1f}, disk {pb['disk']:,.1f} MB/s")
        for n in c.notes:
            click.echo(f"note: {n}")
