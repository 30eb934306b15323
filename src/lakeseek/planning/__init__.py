"""Planning a query: the files it reads through an index (:mod:`.planner`), the plan itself
(:mod:`.plan`), and how it went (:mod:`.explain`)."""

from lakeseek.planning.explain import Alternative, Explanation, explanation
from lakeseek.planning.plan import Fallback, Plan, PlanCost, Prepared, full_scan
from lakeseek.planning.planner import Planner

__all__ = [
    "Alternative",
    "Explanation",
    "Fallback",
    "Plan",
    "PlanCost",
    "Planner",
    "Prepared",
    "explanation",
    "full_scan",
]
