"""What crosses the SSH channel between the coordinator and a client host's agent: JSON lines.

Nothing is unpickled: bytes are tagged (`{"$b": base64}`) and a mapping with non-string keys (a consumer's
per-producer sequence maps) is a tagged list of pairs (`{"$d": [[k, v], …]}`).
"""

from __future__ import annotations

import base64
import json
from typing import Any


def _enc(v: Any) -> Any:
    if isinstance(v, bytes | bytearray):
        return {"$b": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v):
            return {k: _enc(x) for k, x in v.items()}
        return {"$d": [[_enc(k), _enc(x)] for k, x in v.items()]}
    if isinstance(v, list | tuple):
        return [_enc(x) for x in v]
    return v


def _dec(v: Any) -> Any:
    if isinstance(v, dict):
        if set(v) == {"$b"}:
            return base64.b64decode(v["$b"])
        if set(v) == {"$d"}:
            return {_dec(k): _dec(x) for k, x in v["$d"]}
        return {k: _dec(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_dec(x) for x in v]
    return v


def encode(obj: Any) -> str:
    return json.dumps(_enc(obj), separators=(",", ":"))


def decode(line: str) -> Any:
    return _dec(json.loads(line))
