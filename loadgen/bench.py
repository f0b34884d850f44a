"""One measured run of a workload against a target, as `kafkatune bench` records it.

The record (records.run) carries the profile of the cluster the run was held against, the client
library, and the broker configs the run ran with (read back from every broker when the cluster allows).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from brokerconf.apply import current_configs
from cluster.target import Target
from core.errors import UserError
from drivers.api import load_driver
from loadgen import result, runner, scaleout, search
from loadgen.backlog import GIB
from loadgen.sustainable import Search, Slo
from loadgen.workload import Workload
from records.run import RunRecord
from records.testbed import load_state, state_path
from testbed import links, netns
from testbed.lifecycle import CLIENT_HOSTS, NODES

Say = Callable[[str], None]


def describe(w: Workload, bootstrap: str) -> str:
    """One line saying what the run will do."""
    rate = w.rate_label
    return (
        f"bench {w.name}: {w.topics}×{w.partitionsPerTopic} partitions, {w.messageSize} B, "
        f"{w.producersPerTopic} producer(s), {w.consumerPerSubscription} consumer(s), {rate}, "
        f"{w.warmup_seconds:g} s warm-up + {w.test_seconds:g} s, {w.payload_mode}, against {bootstrap}"
    )


def refuse_what_cannot_run(w: Workload, log_disk: Path | None = None) -> None:
    """A UserError, before anything is created, for a backlog the driver's system cannot hold or that does not fit
    the disk of the brokers' logs (`log_disk`: a folder on it, when kafkatune knows it: the testbed's)."""
    drv = load_driver(w.driver)  # an unknown driver is refused here
    if not w.builds_backlog:
        return
    if not drv.holds_backlog:
        raise UserError(
            f"consumerBacklogSizeGB: the {w.driver} driver's system keeps no backlog for a paused consumer "
            "(backlog runs need one that does: kafka)"
        )
    if log_disk is not None:
        where = next((p for p in (log_disk, *log_disk.parents) if p.exists()), Path("/"))
        free = shutil.disk_usage(where).free
        rf = w.replicationFactor or 3
        need = w.consumerBacklogSizeGB * GIB * rf
        if need > 0.8 * free:
            raise UserError(
                f"consumerBacklogSizeGB: {w.consumerBacklogSizeGB:g} GiB × replication factor {rf} = "
                f"{need / 1e9:,.0f} GB of log, more than 80 % of the {free / 1e9:,.0f} GB free under {where} "
                "(the testbed's brokers write there)"
            )


def _shaped(t: Target) -> netns.ShapedNetwork | None:
    """The shaped testbed's network when `t` is that testbed."""
    if t.kind != "testbed" or t.state_dir is None or not state_path(t.state_dir).exists():
        return None
    return netns.of_state(load_state(state_path(t.state_dir)), NODES, CLIENT_HOSTS)


def measure(
    w: Workload,
    t: Target,
    *,
    on_tick: runner.View | None = None,
    say: Say = print,
    keep_topics: bool = False,
    slo: Slo | None = None,
    how: Search | None = None,
    scale_out: bool = False,
) -> RunRecord:
    """Run `w` on `t` and build its record (not yet written).

    producerRate 0 discovers the sustainable rate within `slo` (loadgen.search, as `how` says): the record is the
    search run's, with the answer under `sustainable` and the probe's summary under `probe`. `scale_out`: a max-rate
    run whose producer send loops were the limit runs again with more processes (loadgen.scaleout, `scaled_out`).
    """
    driver = load_driver(w.driver)
    # Kafka's broker configs only from Kafka: another system's server would keep the admin client waiting 10 s
    brokers = current_configs(t.bootstrap, t.common, say) if driver.local_server == "testbed" else None
    common = {**t.common, "bootstrap.servers": t.bootstrap}
    found, grown, probe = None, None, None
    net = _shaped(t)
    sampler = links.Sampler(net).start() if net is not None else None
    at = runner.RunSettings(common, t.placements, t.metrics_urls, on_tick, say)
    try:
        if w.discovers_rate:
            probe, searched, found = search.discover(w, at, slo or Slo(), how or Search())
            raw = searched or probe
        elif scale_out:
            cap = scaleout.cores_for_workers(t.placements)
            raw, grown = scaleout.run(w, at, cap=cap, keep_topics=keep_topics)
        else:
            raw = runner.run(w, at, keep_topics=keep_topics)
    finally:  # what each link carried, resent, and how long its round trips took (testbed.links)
        seen = sampler.stop() if sampler is not None else None
    client = driver.client_info()
    slo_ms = (slo or Slo()).p99_e2e_ms
    tail_s = found.tail_seconds() if found is not None else None
    rec = result.build(raw, t.profile, client, slo_ms, tail_s)
    if found is not None and slo_ms is not None:
        result.judge_step_tails(raw, found, slo_ms)
    done = replace(
        rec.result,
        broker_config=brokers,
        links=tuple(seen or ()),
        backlog=raw.backlog,
        scaled_out=grown.record() if grown is not None and grown.scaled else None,
    )
    if found is not None and probe is not None:
        done = replace(done, sustainable=found.record(), probe=result.build(probe, t.profile, client).result.summary)
    return rec._replace(result=done)
