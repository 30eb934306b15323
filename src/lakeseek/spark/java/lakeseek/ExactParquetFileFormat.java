package lakeseek;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's Parquet format, handing Parquet no filter on a floating-point column. Parquet's reader
 * skips row groups by statistics, dictionaries, page indexes and bloom filters, all wrong for
 * floating point by SQL's rules: statistics leave NaN out (Spark's NaN equals NaN and is above
 * every number) and dictionaries and bloom filters compare bits (-0.0 is not 0.0), so {@code f =
 * 0.0} dropped the row groups holding only -0.0. Nor a filter with a date or timestamp before the
 * Gregorian calendar's start: Spark hands Parquet such a value through Java's hybrid (Julian)
 * calendar, where the files hold proleptic Gregorian days ({@code d = DATE '1582-10-10'} dropped
 * the row group holding it). Spark still applies every filter to every row read. (Not a relation
 * option: Spark replaces a catalog table's cached relation options.)
 */
public final class ExactParquetFileFormat extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;

  @Override
  public scala.Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> buildReaderWithPartitionValues(
      SparkSession session,
      StructType dataSchema,
      StructType partitionSchema,
      StructType requiredSchema,
      scala.collection.immutable.Seq<Filter> filters,
      scala.collection.immutable.Map<String, String> options,
      Configuration hadoopConf) {
    List<Filter> exact = new ArrayList<>();
    for (Filter filter : CollectionConverters.asJava(filters)) {
      if (Arrays.stream(filter.references()).noneMatch(name -> mayBeFloating(dataSchema, name))
          && !beforeGregorian(filter)) {
        exact.add(filter);
      }
    }
    return super.buildReaderWithPartitionValues(
        session,
        dataSchema,
        partitionSchema,
        requiredSchema,
        CollectionConverters.asScala(exact).toList(),
        options,
        hadoopConf);
  }

  // With a margin for time zones.
  private static final LocalDate GREGORIAN_SAFE = LocalDate.of(1583, 1, 1);

  /**
   * Whether the filter compares with a date or timestamp before GREGORIAN_SAFE: every filter is a
   * case class of its attribute, its values (an array, for In) and the filters it combines.
   */
  private static boolean beforeGregorian(Filter filter) {
    if (!(filter instanceof scala.Product product)) {
      return true; // not known to be safe
    }
    Iterator<Object> elements = CollectionConverters.asJava(product.productIterator());
    while (elements.hasNext()) {
      Object element = elements.next();
      List<Object> values =
          element instanceof Object[] array ? Arrays.asList(array) : Collections.singletonList(element);
      for (Object value : values) {
        if (value instanceof Filter child ? beforeGregorian(child) : isBeforeGregorian(value)) {
          return true;
        }
      }
    }
    return false;
  }

  private static boolean isBeforeGregorian(Object value) {
    LocalDate day = null;
    if (value instanceof LocalDate date) {
      day = date;
    } else if (value instanceof java.sql.Date date) {
      day = date.toLocalDate();
    } else if (value instanceof Instant instant) {
      day = instant.atZone(ZoneOffset.UTC).toLocalDate();
    } else if (value instanceof java.sql.Timestamp timestamp) {
      day = timestamp.toInstant().atZone(ZoneOffset.UTC).toLocalDate();
    } else if (value instanceof LocalDateTime timestamp) {
      day = timestamp.toLocalDate();
    }
    return day != null && day.isBefore(GREGORIAN_SAFE);
  }

  /** Whether the column is floating point, or not a top-level column (then not known to be safe). */
  private static boolean mayBeFloating(StructType schema, String name) {
    for (StructField field : schema.fields()) {
      if (field.name().equalsIgnoreCase(name)) {
        DataType type = field.dataType();
        return type instanceof FloatType || type instanceof DoubleType;
      }
    }
    return true;
  }
}
