"""Where the tasks of index jobs run: a task runner protocol with a local (in-process) runner
and a Spark runner, and the Spark session lakeseek starts by default. pyspark is imported only
when Spark work runs."""
