package lakeseek;

import org.apache.spark.sql.sources.Filter;

/**
 * The index side of a lakeseek scan, implemented in Python (lakeseek.spark.jvm) and called back
 * through py4j: the JVM lists and reads the lake, the Python driver consults the index.
 */
public interface Planner {
  /** The lake's schema as a Spark StructType JSON; options is a JSON object of the read options. */
  String schema(String options);

  /**
   * The paths, relative to the lake root and separated by NUL, of the only files that may hold rows
   * passing all of filters; null when the index cannot narrow the scan.
   */
  String candidates(String options, Filter[] filters);
}
