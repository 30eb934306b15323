package lakeseek;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Sample;
import org.apache.spark.sql.catalyst.plans.logical.Sort;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.types.DataTypes;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code TABLESAMPLE (p PERCENT)}, {@code df.sample(f)} and {@code df.randomSplit} over a lakeseek
 * scan of a lake with stored weights (an OTree lake): the sample becomes the filter {@code
 * _lakeseek_weight} in {@code [T(lower), T(upper))}, {@code T(f) = ceil(f * 2^32) - 2^31}, as
 * lakeseek.layout.tree.sample_threshold. Weights are uniform, so that is a sample of the fraction
 * asked; it is also deterministic and nested, and it reaches the file index as a pushed filter, so
 * only the files whose blocks hold such weights are read. Samples with replacement, and samples of
 * anything but a scan (a join, an aggregate), stay Spark's.
 */
public final class WeightSample extends Rule<LogicalPlan> {
  static final String WEIGHT = "_lakeseek_weight";

  /** Adds the rule to the session's optimizer once. */
  public static void install(SparkSession session) {
    ExperimentalMethods experimental = session.experimental();
    List<Rule<LogicalPlan>> rules = new ArrayList<>(CollectionConverters.asJava(experimental.extraOptimizations()));
    if (rules.stream().noneMatch(rule -> rule instanceof WeightSample)) {
      rules.add(new WeightSample());
      experimental.extraOptimizations_$eq(CollectionConverters.asScala(rules).toList());
    }
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    List<LogicalPlan> children = CollectionConverters.asJava(plan.children());
    List<LogicalPlan> rewritten = new ArrayList<>(children.size());
    boolean changed = false;
    for (LogicalPlan child : children) {
      LogicalPlan after = apply(child);
      changed |= after != child;
      rewritten.add(after);
    }
    LogicalPlan updated = changed ? plan.withNewChildren(CollectionConverters.asScala(rewritten).toList()) : plan;
    if (updated instanceof Sample sample && !sample.withReplacement()) {
      LogicalPlan filtered = weighed(sample.child(), sample.lowerBound(), sample.upperBound());
      if (filtered != null) {
        return filtered;
      }
    }
    return updated;
  }

  /** {@code plan} with the weight filter right above its lakeseek scan; null when it is not one. */
  private static LogicalPlan weighed(LogicalPlan plan, double lower, double upper) {
    if (plan instanceof Project || plan instanceof Filter || plan instanceof Sort) {
      LogicalPlan child = weighed(plan.children().head(), lower, upper);
      return child == null ? null : plan.withNewChildren(CollectionConverters.asScala(List.of(child)).toList());
    }
    if (!(plan instanceof LogicalRelation relation)
        || !(relation.relation() instanceof HadoopFsRelation files)
        || !(files.location() instanceof IndexedFileIndex)) {
      return null;
    }
    Attribute weight = null;
    for (Attribute attribute : CollectionConverters.asJava(relation.output())) {
      if (attribute.name().equals(WEIGHT) && attribute.dataType().equals(DataTypes.IntegerType)) {
        weight = attribute;
      }
    }
    if (weight == null) {
      return null;
    }
    Expression condition = null;
    if (lower > 0) {
      long from = threshold(lower);
      condition =
          from > Integer.MAX_VALUE
              ? Literal.create(false, DataTypes.BooleanType)
              : new GreaterThanOrEqual(weight, Literal.create((int) from, DataTypes.IntegerType));
    }
    if (threshold(upper) <= Integer.MAX_VALUE) {
      Expression below = new LessThan(weight, Literal.create((int) threshold(upper), DataTypes.IntegerType));
      condition = condition == null ? below : new And(condition, below);
    }
    return condition == null ? plan : new Filter(condition, plan);
  }

  /** The stored weight a sample of {@code fraction} keeps rows below: above every int from 1 on. */
  static long threshold(double fraction) {
    return (long) Math.ceil(fraction * 4294967296.0) - 2147483648L;
  }
}
