"""The load generator: it owns the clock, drives a messaging system through its driver, and records.

workload (OMB's workload file, validated), payload (the timed header and distinct bodies), recorder
(HdrHistograms, per-second counters), worker (one producer or consumer process; the send loop), channel (what a
coordinator shares with its workers), placement (where workers run: here, a network namespace, or a client host
over SSH via agent and wire), runner (one run: topics, workers, time line, drain), result (the run record:
records.run), warmup (a cold cluster's JIT warmed before anything is measured).
"""
