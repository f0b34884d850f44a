"""What several commands share: progress on stderr, the testbed folders, the inventory options."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from core import paths
from testbed.dist import default_dist
from testbed.lifecycle import Testbed

F = TypeVar("F", bound=Callable[..., Any])


def say(msg: str) -> None:
    """Progress and notes go to stderr, so stdout stays the command's result (`--json` and the like)."""
    click.echo(msg, err=True)


def state_dir_option(f: F) -> F:
    return click.option(
        "--state-dir",
        type=click.Path(path_type=Path),
        default=None,
        help="Testbed state folder (default $KAFKATUNE_STATE or ~/.cache/kafkatune/testbed).",
    )(f)


def testbed_options(f: F) -> F:
    """--state-dir, --cache-dir and --base-port: which testbed, and where its jars are."""
    f = state_dir_option(f)
    f = click.option(
        "--cache-dir",
        type=click.Path(path_type=Path),
        default=None,
        help="Where the Kafka jars are cached (default $KAFKATUNE_CACHE or ~/.cache/kafkatune).",
    )(f)
    return click.option(
        "--base-port",
        type=int,
        default=29090,
        show_default=True,
        help="Loopback mode: node i listens on base+i, controller base+100+i, metrics base+200+i.",
    )(f)


def testbed(
    state_dir: Path | None, cache_dir: Path | None = None, base_port: int = 29090, jvm_extra: Sequence[str] = ()
) -> Testbed:
    """The testbed in `state_dir` (the default one when None); `jvm_extra`: JVM options its brokers start with
    beyond their own (testbed.nodes.jvm_options)."""
    return Testbed(
        state_dir or paths.state_dir(), default_dist(cache_dir), base_port=base_port, jvm_extra=jvm_extra or None
    )


def inventory_options(what: str) -> Callable[[F], F]:
    """`--inventory INV` (help: `what`) and `--accept-new-host-keys`, for commands that can work on a
    cluster over SSH."""

    def deco(f: F) -> F:
        f = click.option(
            "--accept-new-host-keys",
            is_flag=True,
            help="With --inventory: trust and record host keys not yet in known_hosts (a changed key is refused).",
        )(f)
        return click.option(
            "--inventory", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None, help=what
        )(f)

    return deco
