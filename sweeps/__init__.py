"""The sweep: Optuna ask/tell over producer, broker and consumer settings against a real cluster.

spec (the sweep spec, validated), space (search spaces, complete trial configs, the published baselines),
target (the spec's cluster and how its broker configs change), trial (the trial protocol: apply, read
back, measure in windows, judge, record), storage (the Optuna storage, resume and shared studies), engine
(baselines, stages, confirmation, the summary; progress through `SweepEvents` callbacks).
"""
