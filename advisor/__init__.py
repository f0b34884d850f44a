"""From measurements to advice: files and numbers in, judgement out; it never talks to a cluster except to read a live
one's configs and metrics (`live`).

ceiling (the ceiling model), diagnose (which resource bound a trial), analysis (Spark's tables with that judgement),
trials (which trials a judgement rests on), noise (run-to-run noise and each parameter's effect, computed once for the
advice and the report), rules (recommendations with evidence; context, what they know of the study beyond its tables),
fixes (the settings that move a bound or a latency part), latency (where a record's time goes, and SLO misses), study
(everything about one study, for advise, plan and report), verdict (the sweep's confirmation in sentences), plan
(capacity planning), live (advice on a live cluster), diff (baseline vs candidate, each change judged against the noise
of repeats).
"""
