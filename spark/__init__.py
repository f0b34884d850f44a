"""The Spark jobs of the analysis: a study's records in, Parquet tables out (records.analysis).

session (one SparkSession set up for this machine: the venv's Python, Java 17, loopback; `local[*]` or any
master URL), series (the per-second job over every run's Parquet files), tables (trials, params,
importance, pareto), analyze (the job; the judgement of each trial is passed in by the advisor).
"""
