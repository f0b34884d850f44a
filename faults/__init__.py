"""Faults injected during a run's measurement window, and the signs of ones nobody planned.

`faults.spec` parses a fault (`KIND[=VALUE]:TARGET@AT[+FOR]`), `faults.inject` applies a schedule of them to the
testbed while a run measures and records when each took effect and when the cluster was whole again,
`faults.disturbed` reads a run's broker metrics for events the run did not plan (a broker restarting, ISR
shrinking, the controller moving).
"""
