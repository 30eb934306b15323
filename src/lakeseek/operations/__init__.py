"""Operations that change an index, one module each: create, refresh, optimize, delete and
restore, vacuum and cancel; :mod:`.protocol` is how each of them runs and commits."""

from lakeseek.operations.create import create_index
from lakeseek.operations.optimize import OptimizeMode, optimize_index
from lakeseek.operations.refresh import RefreshMode, refresh_index
from lakeseek.operations.state import delete_index, restore_index
from lakeseek.operations.vacuum import VacuumResult, cancel_operations, vacuum_index

__all__ = [
    "OptimizeMode",
    "RefreshMode",
    "VacuumResult",
    "cancel_operations",
    "create_index",
    "delete_index",
    "optimize_index",
    "refresh_index",
    "restore_index",
    "vacuum_index",
]
