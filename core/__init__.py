"""The ground floor: what every other folder may use, and which imports none of them.

errors (the exit-code-carrying exceptions and the one pydantic error formatter), files (written whole or not at all;
YAML and JSON read with one-line errors), paths (cache and state folders), interrupts (steps Ctrl-C does not cut),
secrets (the one rule for what is a secret and how it is masked), procs (waiting, stopping processes, ports), fmt
(number formatting), typed (frozen dataclasses to and from JSON), java (the JDK that runs Kafka, Pulsar and Spark).
"""
