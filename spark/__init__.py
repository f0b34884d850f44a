"""PySpark jobs over `runs/` (per-trial, per-second and per-parameter tables). Not built yet."""
