"""`kafkatune plan`: brokers, partitions, clients, NIC and disk for a target rate."""

from __future__ import annotations

import json
from pathlib import Path

import click

from advisor import analysis
from advisor.plan import plan
from advisor.study import candidate
from kafkatune import render
from kafkatune.options import say
from records.analysis import load_table
from records.study import open_study
from records.summary import read_summary


@click.command("plan")
@click.option("--target-mb-s", type=float, required=True, help="Producer payload rate to carry, MB/s.")
@click.option("--rf", type=int, default=3, show_default=True)
@click.option("--acks", type=click.Choice(["0", "1", "all", "-1"]), default="all", show_default=True)
@click.option("--message-bytes", type=int, default=1024, show_default=True)
@click.option("--consumer-groups", type=int, default=1, show_default=True)
@click.option("--nic-mbps", type=float, default=None, help="Per-broker NIC, MB/s each way (default: the study's).")
@click.option("--disk-mbps", type=float, default=None, help="Per-broker disk write, MB/s (default: the study's).")
@click.option(
    "--from",
    "from_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="A study: use its measured efficiency and rates.",
)
@click.option(
    "--headroom", type=float, default=0.7, show_default=True, help="Plan to run at this fraction of capacity."
)
@click.option(
    "--spare-brokers",
    type=int,
    default=1,
    show_default=True,
    help="Brokers that may be down while the target still holds at the headroom (0: no allowance).",
)
@click.option("--json", "as_json", is_flag=True)
def command(
    target_mb_s: float,
    rf: int,
    acks: str,
    message_bytes: int,
    consumer_groups: int,
    nic_mbps: float | None,
    disk_mbps: float | None,
    from_dir: Path | None,
    headroom: float,
    spare_brokers: int,
    as_json: bool,
) -> None:
    """Brokers, partitions, producers, consumers, NIC and disk per broker for a target rate."""
    trials = profile = None
    confirmed: list[str] = []
    if from_dir is not None:
        profile = open_study(from_dir).profile
        trials = load_table(analysis.ensure(from_dir, None, say), "trials")
        chosen = candidate(read_summary(from_dir), None)
        confirmed = list(chosen.trial_ids) if chosen else []
    p = plan(
        target_mb_s,
        rf=rf,
        acks=acks,
        message_bytes=message_bytes,
        nic_mb_s=nic_mbps,
        disk_mb_s=disk_mbps,
        consumer_groups=consumer_groups,
        headroom=headroom,
        spare_brokers=spare_brokers,
        trials=trials,
        confirmed=confirmed,
        profile=profile,
    )
    if as_json:
        click.echo(json.dumps(p.as_json(), indent=2))
    else:
        render.plan(p, message_bytes)
