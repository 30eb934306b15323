package lakeseek;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.sources.RelationProvider;
import org.apache.spark.sql.sources.SchemaRelationProvider;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Format "lakeseek" on the JVM: the lake as Spark's own Parquet relation (its listing, partition
 * discovery, column pruning and vectorized reader), with a file index that keeps only the files
 * the lakeseek index names for the query's filters. Spark still applies every filter to every row.
 */
public final class DefaultSource implements RelationProvider, SchemaRelationProvider, DataSourceRegister {
  private static volatile Planner planner;
  // The options for lakeseek itself (lowercase, as kept here), not for Spark's Parquet reader.
  private static final List<String> LAKESEEK_OPTIONS =
      List.of("path", "index", "name", "maxpartitionbytes", "opencostinbytes", "parallelism");

  /** Called from Python by lakeseek.spark.register: the index side of every lakeseek scan in this JVM. */
  public static void use(Planner python) {
    planner = python;
  }

  static Planner planner() {
    Planner current = planner;
    if (current == null) {
      throw new IllegalStateException(
          "lakeseek: no index planner in this JVM; call lakeseek.spark.register(spark) from PySpark first");
    }
    return current;
  }

  @Override
  public String shortName() {
    return "lakeseek";
  }

  @Override
  public BaseRelation createRelation(SQLContext context, scala.collection.immutable.Map<String, String> parameters) {
    return relation(context, parameters, null);
  }

  @Override
  public BaseRelation createRelation(
      SQLContext context, scala.collection.immutable.Map<String, String> parameters, StructType schema) {
    return relation(context, parameters, schema);
  }

  private static BaseRelation relation(
      SQLContext context, scala.collection.immutable.Map<String, String> parameters, StructType schema) {
    Map<String, String> options = new TreeMap<>();
    CollectionConverters.asJava(parameters).forEach((key, value) -> options.put(key.toLowerCase(Locale.ROOT), value));
    String path = options.get("path");
    if (path == null) {
      throw new IllegalArgumentException(
          "lakeseek: the lake's path is missing: spark.read.format('lakeseek').load(PATH) "
              + "or CREATE TABLE ... USING lakeseek OPTIONS (path 'PATH')");
    }
    // Python must open the directory the JVM lists: qualify the path the JVM's way (its working
    // directory, Hadoop's reading of the string) and hand Python a plain local path or a URI.
    Path root;
    try {
      Path given = new Path(path);
      root = given.getFileSystem(context.sparkContext().hadoopConfiguration()).makeQualified(given);
    } catch (IOException error) {
      throw new IllegalArgumentException("lakeseek: cannot reach the lake " + path + ": " + error.getMessage(), error);
    }
    options.put("path", "file".equals(root.toUri().getScheme()) ? root.toUri().getPath() : root.toString());
    Planner current = planner();
    String json = toJson(options);
    String answer = current.schema(json);
    if (answer.startsWith(Planner.REFUSED)) {
      // An IllegalArgumentException reaches PySpark as its own, with the message alone.
      throw new IllegalArgumentException(answer.substring(Planner.REFUSED.length()));
    }
    JsonNode described = readJson(answer);
    StructType lakeSchema =
        schema != null ? schema : (StructType) DataType.fromJson(described.get("schema").toString());
    Map<String, String> parquetOptions = new TreeMap<>(options);
    parquetOptions.keySet().removeAll(LAKESEEK_OPTIONS);
    // What Spark's listing needs to see the lake's files at all (an OTree lake's under data/).
    described
        .get("options")
        .fields()
        .forEachRemaining(entry -> parquetOptions.put(entry.getKey(), entry.getValue().asText()));
    // Spark's Parquet FileFormat by class name: a HadoopFsRelation even when Parquet runs on
    // DataSource V2 (spark.sql.sources.useV1SourceList without parquet), where "parquet" would
    // name ParquetDataSourceV2. The root is escaped so that Spark's glob expansion reads it as is.
    Dataset<?> lake =
        (Dataset<?>)
            context
                .sparkSession()
                .read()
                .schema(lakeSchema)
                .options(parquetOptions)
                .format(ParquetFileFormat.class.getName())
                .load(literalPath(root.toString()));
    LogicalPlan plan = lake.queryExecution().analyzed();
    if (!(plan instanceof LogicalRelation) || !(((LogicalRelation) plan).relation() instanceof HadoopFsRelation)) {
      throw new IllegalStateException("lakeseek: Spark did not read " + path + " as a Parquet file relation");
    }
    HadoopFsRelation parquet = (HadoopFsRelation) ((LogicalRelation) plan).relation();
    return parquet.copy(
        new IndexedFileIndex(parquet.location(), json, current, parquet.partitionSchema()),
        parquet.partitionSchema(),
        parquet.dataSchema(),
        parquet.bucketSpec(),
        new ExactParquetFileFormat(),
        parquet.options(),
        parquet.sparkSession());
  }

  /** The path with Hadoop's glob characters escaped: {@code spark.read} globs the paths it is given. */
  static String literalPath(String path) {
    return path.replaceAll("([\\\\{}\\[\\]*?])", "\\\\$1");
  }

  private static JsonNode readJson(String json) {
    try {
      return new ObjectMapper().readTree(json);
    } catch (JsonProcessingException error) {
      throw new IllegalStateException("lakeseek: the planner's answer is not JSON: " + error.getMessage(), error);
    }
  }

  private static String toJson(Map<String, String> options) {
    try {
      return new ObjectMapper().writeValueAsString(options);
    } catch (JsonProcessingException error) {
      throw new IllegalArgumentException("lakeseek: options not serializable: " + error.getMessage(), error);
    }
  }
}
