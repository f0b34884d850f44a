"""kafkatune: a Kafka tuning advisor and parameter-sweep engine for synchronous replication.

This package holds the CLI, the validation of configuration coming from outside (workload and spec
files) and the record types shared by the other packages. It measures and tunes nothing itself.
"""

from __future__ import annotations

__version__ = "0.1.0"
