"""Planning a query: the files it reads through an index (:mod:`.planner`), the plan itself
(:mod:`.plan`), and how it went (:mod:`.explain`)."""

from lakeseek.planning.explain import Explanation, explanation
from lakeseek.planning.plan import Fallback, Plan, PlanCost, full_scan
from lakeseek.planning.planner import plan

__all__ = ["Explanation", "Fallback", "Plan", "PlanCost", "explanation", "full_scan", "plan"]
