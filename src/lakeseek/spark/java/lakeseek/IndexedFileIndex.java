package lakeseek;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.DataSourceStrategy$;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's listing of the lake, narrowed per query to the files the lakeseek index names. When the
 * index cannot help (no usable filter, a damaged index) and the lake is the directory Spark lists,
 * every listed file is kept: the index only ever makes a scan smaller, never its answer. The planner
 * is asked even without a filter: a table format's directory holds files the table removed, which
 * it leaves out.
 */
final class IndexedFileIndex implements FileIndex {
  private final FileIndex lake;
  private final String options;
  private final Planner planner;
  // The partition columns the relation was made with: its rows are read as these types.
  private final StructType partitions;

  // Whether a query used the listing Spark made with the relation: later ones list the lake again.
  private volatile boolean listingUsed = false;

  IndexedFileIndex(FileIndex lake, String options, Planner planner, StructType partitions) {
    this.lake = lake;
    this.options = options;
    this.planner = planner;
    this.partitions = partitions;
  }

  @Override
  public Seq<PartitionDirectory> listFiles(Seq<Expression> partitionFilters, Seq<Expression> dataFilters) {
    checkPartitions();  // an earlier query's listing may have found them retyped
    Seq<PartitionDirectory> listed = lake.listFiles(partitionFilters, dataFilters);
    List<Filter> filters = new ArrayList<>();
    for (Expression expression : CollectionConverters.asJava(dataFilters)) {
      scala.Option<Filter> filter = DataSourceStrategy$.MODULE$.translateFilter(expression, true);
      if (filter.isDefined()) {
        filters.add(filter.get());
      }
    }
    // An error in the planner fails the query: the listing may hold files that are not the lake's
    // (a table format's removed files), so reading it all is no safe fallback here. The planner
    // falls back to every file itself where that is right.
    String candidates = planner.candidates(options, filters.toArray(new Filter[0]));
    if (candidates == null) {
      // Every file the lake holds now: a catalog table keeps its relation, and with it the listing
      // an earlier query used, which would miss files added since and name files removed.
      if (listingUsed) {
        refreshListing();
        listed = lake.listFiles(partitionFilters, dataFilters);
      }
      listingUsed = true;
      return listed;
    }
    listingUsed = true;
    if (candidates.startsWith(Planner.REFUSED)) {
      throw new IllegalArgumentException(candidates.substring(Planner.REFUSED.length()));
    }
    Set<String> keep = new HashSet<>(List.of(candidates.split("\u0000", -1)));
    keep.remove("");  // no candidate at all
    String root = lake.rootPaths().head().toUri().getPath().replaceAll("/+$", "") + "/";
    // The planner answers for the lake now; Spark's listing is the one it made when the relation
    // was created. A candidate it does not hold means the lake changed since (an optimize or an
    // overwrite may have replaced every file): list again rather than read a stale subset.
    if (!keep.isEmpty() && !relative(lake.listFiles(emptyFilters(), emptyFilters()), root).containsAll(keep)) {
      refreshListing();
      listed = lake.listFiles(partitionFilters, dataFilters);
    }
    List<PartitionDirectory> kept = new ArrayList<>();
    for (PartitionDirectory directory : CollectionConverters.asJava(listed)) {
      List<FileStatusWithMetadata> files = new ArrayList<>();
      for (FileStatusWithMetadata file : CollectionConverters.asJava(directory.files())) {
        String path = file.getPath().toUri().getPath();
        if (path.startsWith(root) && keep.contains(path.substring(root.length()))) {
          files.add(file);
        }
      }
      if (!files.isEmpty()) {
        kept.add(PartitionDirectory.apply(directory.values(), CollectionConverters.asScala(files).toList()));
      }
    }
    return CollectionConverters.asScala(kept).toList();
  }

  /** Spark's listing of the lake made again, its partition columns checked before any filter is. */
  private void refreshListing() {
    lake.refresh();
    checkPartitions();
  }

  /**
   * Fails the query when the listing now types the partition columns otherwise than the relation
   * does (a directory {@code p=2.5} beside {@code p=1}): its values would be read as the old types,
   * wrong or failing, where a DataFrame made now reads them right. (A catalog table's listing casts
   * the values to the table's types itself, and Spark fails it first: INVALID_PARTITION_VALUE.)
   */
  private void checkPartitions() {
    StructType now = lake.partitionSchema();
    if (!now.simpleString().equals(partitions.simpleString())) {
      throw new IllegalArgumentException(
          "lakeseek: the lake's partition columns are "
              + now.simpleString()
              + " now, "
              + partitions.simpleString()
              + " when this DataFrame (or view) was made: read the lake again");
    }
  }

  private static Seq<Expression> emptyFilters() {
    return CollectionConverters.asScala(new ArrayList<Expression>()).toList();
  }

  /** The listed files' paths under {@code root}, relative to it (as the planner names them). */
  private static Set<String> relative(Seq<PartitionDirectory> listed, String root) {
    Set<String> found = new HashSet<>();
    for (PartitionDirectory directory : CollectionConverters.asJava(listed)) {
      for (FileStatusWithMetadata file : CollectionConverters.asJava(directory.files())) {
        String path = file.getPath().toUri().getPath();
        if (path.startsWith(root)) {
          found.add(path.substring(root.length()));
        }
      }
    }
    return found;
  }

  @Override
  public Seq<Path> rootPaths() {
    return lake.rootPaths();
  }

  @Override
  public String[] inputFiles() {
    return lake.inputFiles();
  }

  @Override
  public void refresh() {
    lake.refresh();
  }

  @Override
  public long sizeInBytes() {
    return lake.sizeInBytes();
  }

  @Override
  public StructType partitionSchema() {
    return lake.partitionSchema();
  }
}
