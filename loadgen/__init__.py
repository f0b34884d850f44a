"""The load generator: it owns the clock, drives a messaging system through its driver, and records.

workload (OMB's workload file, validated), payload (the timed header and distinct bodies), recorder (HdrHistograms,
per-second counters), worker (a producer process; the send loops), consumer (a consumer process), ticker (a worker's
per-second report), channel (what a coordinator shares with its workers), placement (where workers run: here, a network
namespace, or a client host over SSH via agent and wire), runner (one run: topics, workers, time line, drain), scaleout
(a max-rate run again with more producer processes when their send loops were the limit), backlog (OMB's build-and-drain
runs), sustainable (the sustainable-rate discovery; search, its steps; knee, p99 against rate and whether the tail is
load), bench (one `kafkatune bench` run), result (the run record: records.run), omb (the run as OMB's TestResult),
omb_driver (OMB's driver files), warmup (a cold cluster's JIT warmed before anything is measured).
"""
