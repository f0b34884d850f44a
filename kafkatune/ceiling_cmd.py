"""`kafkatune ceiling`: the ceiling model for any cluster shape (docs/design.md)."""

from __future__ import annotations

import json

import click

from advisor import ceiling
from kafkatune import render


@click.command("ceiling")
@click.option("--brokers", type=int, required=True, help="Number of brokers N.")
@click.option("--rf", type=int, default=3, show_default=True, help="Replication factor r.")
@click.option("--consumer-groups", type=int, default=1, show_default=True, help="Consumer groups C reading the tail.")
@click.option("--nic-mbps", type=float, default=None, help="Per-broker NIC, MB/s each direction.")
@click.option("--nic-in-mbps", type=float, default=None, help="Per-broker inbound NIC, MB/s (overrides --nic-mbps).")
@click.option("--nic-out-mbps", type=float, default=None, help="Per-broker outbound NIC, MB/s.")
@click.option("--disk-mbps", type=float, default=None, help="Per-broker disk write bandwidth, MB/s.")
@click.option("--producer-hosts", type=int, default=None, help="Hosts running the producers.")
@click.option("--consumer-hosts", type=int, default=None, help="Hosts running the consumers.")
@click.option("--client-nic-mbps", type=float, default=None, help="NIC of each client host, MB/s (default --nic-mbps).")
@click.option(
    "--compression-ratio",
    type=float,
    default=1.0,
    show_default=True,
    help="Compressed ÷ uncompressed bytes; limits are then in uncompressed MB/s.",
)
@click.option("--acks", type=click.Choice(["0", "1", "all", "-1"]), default="all", show_default=True)
@click.option("--json", "as_json", is_flag=True, help='Print {"ceiling_mb_s", "bound", "limits"} as JSON.')
def command(
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
    render.ceiling(c)
