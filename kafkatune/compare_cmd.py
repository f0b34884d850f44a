"""`kafkatune compare SPEC.yaml`: the same workloads on Kafka, MQTT, Zenoh, DDS, Pulsar and raw TCP."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click


def register(cli: click.Group) -> None:
    @cli.command("compare")
    @click.argument("spec_file", type=click.Path(path_type=Path))
    @click.option("--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True)
    @click.option("--out", type=click.Path(path_type=Path), default=None, help="Folder (default RUNS_DIR/<name>).")
    @click.option("--state-dir", type=click.Path(path_type=Path), default=None, help="Testbed state folder (Kafka).")
    @click.option("--system", "only", multiple=True, help="Run only this system of the spec (repeatable).")
    @click.option("--dry-run", is_flag=True, help="Validate the spec and print the plan; start nothing.")
    @click.option("--json", "as_json", is_flag=True, help="Print the result files and tables as JSON on stdout.")
    def compare_cmd(
        spec_file: Path,
        runs_dir: Path,
        out: Path | None,
        state_dir: Path | None,
        only: tuple[str, ...],
        dry_run: bool,
        as_json: bool,
    ) -> None:
        """Run the published comparison methods on every system of SPEC_FILE, through one harness.

        \b
        throughput  NTU: back-to-back over payload sizes (8 B … 1 MB), repeated, trimmed median msg/s, bit/s
        pingpong    NTU: one message there and back at a time; RTT/2 percentiles
        native      iperf3 and sockperf on 127.0.0.1 (the floor); a raw-TCP run through the harness (its ceiling)
        fixedRate   OMB: a fixed rate on 1/6/16 partitions, publish and end-to-end percentiles
        iot         periodic flows (p90 against rate) and a sporadic burst beside a periodic flow

        Servers the systems need (Mosquitto, a Zenoh router, Pulsar) are started when not running and
        stopped afterwards; Kafka is the testbed unless the system's `common` names bootstrap.servers.
        Writes RUNS_DIR/<name>/comparison.json, one run record per run, and report/report.{html,md}.
        Exit codes: 0 done (a size a system could not carry is a row with its error); 2 bad spec;
        3 a server could not be started or reached; 4 no run of any system succeeded.
        """
        from compare import report, run
        from compare.spec import load

        spec = load(spec_file)
        run.validate_systems(spec, list(only) or None)
        systems = spec.selected(only)
        n = run.steps(spec, systems)
        say = lambda m: click.echo(m, err=True)  # noqa: E731
        say(
            f"compare {spec.name}: {', '.join(s.name for s in systems)}; "
            + ", ".join(k for k in ("throughput", "pingpong", "native", "fixedRate", "iot") if getattr(spec, k))
            + f"; {n} runs"
        )
        if spec.throughput:
            say(f"  payload sizes: {', '.join(str(x) for x in spec.throughput.size_list())} B")
        if dry_run:
            return
        d = out or runs_dir / spec.name
        done = [0]
        t0 = time.monotonic()

        def tick() -> None:
            done[0] += 1
            el = time.monotonic() - t0
            eta = el / done[0] * (n - done[0])
            say(f"  [{done[0]}/{n}] {el:,.0f} s elapsed, about {eta:,.0f} s left")

        doc = run.compare(spec, d, state_dir=state_dir, say=say, tick=tick, only=list(only) or None)
        r = report.build(d)
        say(f"report: {r.html} (and {r.markdown.name}); records under {d}/")
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "out": str(d),
                        "html": str(r.html),
                        "markdown": str(r.markdown),
                        "charts": r.charts,
                        "systems": doc["systems"],
                        "throughput": doc["throughput"],
                        "pingpong": doc["pingpong"],
                        "native": doc["native"],
                        "fixed_rate": doc["fixed_rate"],
                        "iot_periodic": doc["iot_periodic"],
                        "iot_sporadic": doc["iot_sporadic"],
                    }
                )
            )
        else:
            click.echo(r.markdown.read_text())
        ok = any(
            not r.get("error") and (r.get("msg_s") or r.get("p50_us") or r.get("publish_msg_s"))
            for k in ("throughput", "pingpong", "fixed_rate")
            for r in doc[k]
        )
        if not ok and (doc["throughput"] or doc["pingpong"] or doc["fixed_rate"]):
            from core.errors import RunFailed

            raise RunFailed(f"no run of any system succeeded; see {d}/comparison.json")
