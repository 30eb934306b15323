"""Where index builds run: a task runner protocol with a local (in-process) runner and a
Spark runner, the Spark session lakeseek starts by default, and Spark's view of schemas and
paths. pyspark is imported only when Spark work runs."""
