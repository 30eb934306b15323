package lakeseek;

import org.apache.spark.sql.sources.Filter;

/**
 * The index side of a lakeseek scan, implemented in Python (lakeseek.spark.jvm) and called back
 * through py4j: the JVM lists and reads the lake, the Python driver consults the index.
 */
public interface Planner {
  /**
   * The lake's schema and how Spark lists it, as JSON: {@code {"schema": StructType JSON,
   * "options": {read options Spark's listing of the lake needs}}}; options is a JSON object of the
   * read options. REFUSED and why, when the lake cannot be read this way (no index, or a lake
   * Spark's Parquet scan does not read).
   */
  String schema(String options);

  /** What {@link #candidates} starts with when the scan must not run: then the rest says why. */
  String REFUSED = "\u0001";

  /**
   * The paths, relative to the lake root and separated by NUL, of the only files that may hold rows
   * passing all of filters; null when every file Spark lists may (the lake is the directory Spark
   * lists, and the index cannot narrow the scan); REFUSED and a message when Spark's scan would read
   * rows that are not the lake's.
   */
  String candidates(String options, Filter[] filters);
}
