"""Files written whole or not at all (temp file in the same folder, fsync, rename), and files read with
errors that name the file and what is wrong with it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from core.errors import UserError


def write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write via a temporary file and rename; `mode` (e.g. 0o644) for files meant to be shared."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, obj: Any, mode: int | None = None) -> None:
    write_bytes(path, (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode(), mode)


def write_text(path: Path, text: str, mode: int | None = None) -> None:
    write_bytes(path, text.encode(), mode)


def read_yaml(path: Path) -> object:
    """The YAML document in `path`; a missing file or broken YAML is a one-line UserError."""
    try:
        text = path.read_text()
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise UserError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; an unreadable file, broken JSON or another type is a one-line UserError."""
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: not a readable JSON record ({e})") from None
    if not isinstance(d, dict):
        raise UserError(f"{path}: expected a JSON object")
    return d


def read_record(path: Path, reads_up_to: int) -> dict[str, Any]:
    """A kafkatune record (read_json_object) whose `schema_version` this release reads: every version up to
    `reads_up_to` (a record without one is the first version's); a newer one is refused with a UserError that names
    the file and the versions, as its fields may mean something this release does not know."""
    d = read_json_object(path)
    version = d.get("schema_version", 1)
    if not isinstance(version, int) or version > reads_up_to:
        raise UserError(
            f"{path}: schema_version {version!r} was written by a newer kafkatune (this one reads versions 1 to "
            f"{reads_up_to}): read it with that release, or run the study again with this one"
        )
    return d
