"""Errors that the CLI turns into a one-line message and an exit code."""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user (a file, a flag, a value). Exit code 2; nothing was touched."""

    exit_code = 2


class EnvironmentProblem(Exception):
    """The machine cannot do what was asked (missing tool, no root, a port in use). Exit code 3."""

    exit_code = 3


class RunFailed(Exception):
    """A run started but did not complete as a valid measurement. Exit code 4."""

    exit_code = 4
