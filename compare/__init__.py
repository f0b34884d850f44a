"""The cross-system comparison (`kafkatune compare`): the published methods run on every messaging system
through one harness, so the figures differ by system only.

spec (the comparison spec), harness (a system's server and client hosts, one recorded run), one module per
method (throughput, pingpong, native, fixed_rate, iot), run (all methods over all systems, comparison.json).
The report is reports.comparison's.
"""
