"""Everything that runs on Spark. The only package that imports pyspark at module level."""
