"""PySpark jobs over `runs/`: a study's files in, Parquet tables out (see `spark.analyze`)."""
