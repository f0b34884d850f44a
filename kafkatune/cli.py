"""`kafkatune`: the command line. It wires options to the folders below it; it computes nothing itself.

One module per command (`<name>_cmd.py`, each exposing `command`); rendering in render.py, live.py,
sweep_view.py and sweep_text.py.

Exit codes: 0 ok, 1 unexpected error, 2 bad input (nothing touched), 3 environment problem
(missing tool, no root, cluster not reachable), 4 a run that did not produce a valid measurement,
130 interrupted.
"""

from __future__ import annotations

import importlib
import sys

import click

from core import interrupts
from core.errors import EnvironmentProblem, RunFailed, UserError
from kafkatune.options import say

# name -> (module exposing `command`, its line in `kafkatune --help`). A command's module is imported when
# the command runs, not when kafkatune starts: all of them together import optuna, matplotlib, pyarrow,
# paramiko and the Kafka client, which tripled the start-up time of every command (benchmarks/cli_startup.py).
# The CLI is imported by nothing, so loading its commands by name cannot hide an import cycle.
COMMANDS: dict[str, tuple[str, str]] = {
    "testbed": ("kafkatune.testbed_cmd", "The local 3-node KRaft cluster: install, up, down, status, kill, restart."),
    "servers": ("kafkatune.servers_cmd", "Mosquitto, a Zenoh router and Pulsar for the other drivers."),
    "bench": ("kafkatune.bench_cmd", "Run one workload (OMB field names) and record it in runs/<name>/."),
    "sweep": ("kafkatune.sweep_cmd", "Sweep producer, broker and consumer settings on a real cluster."),
    "study": ("kafkatune.study_cmd", "Show a study's trials and summary again."),
    "probe": ("kafkatune.probe_cmd", "Measure a cluster's link and disk ceilings into its profile."),
    "ceiling": ("kafkatune.ceiling_cmd", "The highest producer rate a cluster shape allows, and what binds it."),
    "analyze": ("kafkatune.analyze_cmd", "Analyse a study or bench run with Spark into Parquet tables."),
    "advise": ("kafkatune.advise_cmd", "Recommendations with evidence, for a study or a live cluster."),
    "plan": ("kafkatune.plan_cmd", "Brokers, partitions, clients, NIC and disk for a target rate."),
    "report": ("kafkatune.report_cmd", "A study's report: HTML, Markdown and recommended .properties."),
    "compare": ("kafkatune.compare_cmd", "The same workloads on Kafka, MQTT, Zenoh, DDS, Pulsar and raw TCP."),
    "hosts": ("kafkatune.hosts_cmd", "Check the hosts of an inventory over SSH."),
    "import-omb": ("kafkatune.import_omb_cmd", "Bring an OpenMessaging Benchmark result file into runs/."),
    "diff": ("kafkatune.diff_cmd", "Baseline vs candidate (runs, studies, OMB results): changes beyond noise."),
}


class Commands(click.Group):
    """The root group: commands listed from COMMANDS, each imported when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        cmd: click.Command = importlib.import_module(COMMANDS[cmd_name][0]).command
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, line) for name, (_, line) in COMMANDS.items()])


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="kafkatune")
def cli() -> None:
    """kafkatune: find the Kafka settings that get the most out of a replicated cluster.

    \b
    Quick start:
      kafkatune testbed up                  # 3 local KRaft brokers, RF 3, min.insync.replicas 2
      kafkatune bench examples/bench-1kb.yaml
      kafkatune testbed down
    """


def main() -> None:
    # Ctrl-C and `kill` end every command through its `finally` (configs restored, topics deleted, workers stopped),
    # also when it was started where SIGINT is ignored: a background job of a shell without job control (cron, CI)
    interrupts.interrupt_on_signals()
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        say("interrupted")
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(2)
    except (UserError, EnvironmentProblem, RunFailed) as e:
        say(f"error: {e}")
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
