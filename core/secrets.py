"""The one rule for what is a secret, and how it is kept out of logs, records and reports.

A config key is secret when its name says so (`sasl.password`, `ssl.keystore.password`,
`sasl.jaas.config`, `ssl.key.location`, …): its value is shown as `***`. A URL's password (a PostgreSQL
storage URL) is masked the same way. Reports also mask any place where a secret's value appears in text.
Inventories never hold secret values at all (references only, see cluster.inventory).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
SECRET_KEY = re.compile(r"(password|passphrase|secret|jaas|token|keystore|truststore|key\.pem|\.key\b)", re.I)


def is_secret_key(key: str) -> bool:
    return bool(SECRET_KEY.search(key))


def redact_mapping(m: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `m` (nested mappings and lists included) with every secret key's value masked."""

    def walk(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {k: (MASK if is_secret_key(str(k)) and v2 not in (None, "") else walk(v2)) for k, v2 in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    out: dict[str, Any] = walk(m)
    return out


def redact_url(url: str) -> str:
    """`scheme://user:password@host/…` shown as `scheme://***@host/…`; other URLs unchanged."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    return f"{scheme}://{MASK}@{rest.rpartition('@')[2]}"


def url_secret(url: str) -> str:
    """The credentials part of a URL (`user:password`), to mask wherever it may be echoed; "" if none."""
    return url.partition("://")[2].rpartition("@")[0]


def secret_values(obj: Any) -> list[str]:
    """The values under secret keys anywhere in `obj` (mappings and lists), longest first."""
    found: set[str] = set()

    def walk(o: Any) -> None:
        if isinstance(o, Mapping):
            for k, v in o.items():
                if isinstance(v, str) and is_secret_key(str(k)) and v not in (MASK, ""):
                    found.add(v)
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(obj)
    return sorted(found, key=len, reverse=True)


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each secret value masked."""
    for s in secrets:
        if s:
            text = text.replace(s, MASK)
    return text
