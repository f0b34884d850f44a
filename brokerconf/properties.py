"""Java .properties text as Kafka's server.properties uses it: read keys, change a few, keep the rest.

Only `key=value` / `key: value` lines, `#`/`!` comments and blank lines; a changed key keeps its place
in the file, a new key goes at the end, every other line stays byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from core.errors import UserError

_LINE = re.compile(r"^\s*([^=:\s#!][^=:\s]*)\s*[=:]\s*(.*?)\s*$")


def parse_text(text: str, source: str) -> dict[str, str]:
    """key -> value; a line that is not a comment, blank or key=value is an error naming it."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith(("#", "!")):
            continue
        m = _LINE.match(line)
        if not m:
            raise UserError(f"{source}:{n}: expected key=value, got {s!r}")
        out[m.group(1)] = m.group(2)
    return out


def without_keys(text: str, keys: Iterable[str]) -> list[str]:
    """The lines of `text` other than those setting one of `keys` (to compare the rest of two files)."""
    ks = set(keys)
    return [ln for ln in text.splitlines() if not ((m := _LINE.match(ln)) and m.group(1) in ks)]


def set_keys(text: str, want: Mapping[str, str | None]) -> str:
    """`text` with each key of `want` set to its value (None: the line removed); other lines untouched."""
    lines = text.splitlines(keepends=True)
    done: set[str] = set()
    out: list[str] = []
    for ln in lines:
        m = _LINE.match(ln.rstrip("\r\n"))
        if m and m.group(1) in want:
            k = m.group(1)
            v = want[k]
            if v is None or k in done:
                continue
            done.add(k)
            out.append(ln if m.group(2) == v else f"{k}={v}\n")
            continue
        out.append(ln)
    new = [f"{k}={v}\n" for k, v in want.items() if v is not None and k not in done]
    if new and out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    return "".join(out + new)
