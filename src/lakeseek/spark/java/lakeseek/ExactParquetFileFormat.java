package lakeseek;

import java.util.ArrayList;
import java.util.Arrays;
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
 * 0.0} dropped the row groups holding only -0.0. Spark still applies every filter to every row
 * read. (Not a relation option: Spark replaces a catalog table's cached relation options.)
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
      if (Arrays.stream(filter.references()).noneMatch(name -> mayBeFloating(dataSchema, name))) {
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
