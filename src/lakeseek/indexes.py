"""Every index of a lake at once: each query goes through the one whose plan costs least.

``open_indexes`` opens the latest version of each of a lake's indexes (of any kind, on any
columns). For a query, every index plans the predicate from its root alone (no index file is
read): what it can narrow, with what index reads, leaving how many files (see
:mod:`lakeseek.cost`). The cheapest estimate runs; an index found damaged on the way gives way
to the next. ``explain`` runs every index's plan and reports each one's estimate against what
it read and the files it left, so the cost model can be checked, not trusted.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence

import pyarrow as pa

from lakeseek.commits.log import IndexLog
from lakeseek.exceptions import IndexLogUnreadableError, IndexNotFoundError
from lakeseek.expressions import Predicate
from lakeseek.expressions.sql import parse_where
from lakeseek.index import Index, LakeListing
from lakeseek.io import counting
from lakeseek.lake.files import again_when_files_change
from lakeseek.lake.state import LakeState
from lakeseek.location import DEFAULT_NAME, LakeLike, Location, index_names, locate
from lakeseek.planning import Alternative, Explanation, Fallback, Plan, Prepared, explanation
from lakeseek.planning.what_if import IndexSpec, specs_of

log = logging.getLogger("lakeseek")


@dataclasses.dataclass(frozen=True)
class _Weighed:
    """One index's view of a query: the lake as it sees it, the bound predicate, its plan."""

    index: Index
    state: LakeState
    predicate: Predicate
    prepared: Prepared


def open_indexes(
    source: LakeLike,
    *,
    index: str | None = None,
    names: list[str] | None = None,
    lake_listing: LakeListing = "per_query",
    storage_options: Mapping[str, object] | None = None,
) -> IndexSet:
    """The latest version of every committed index of the lake at ``source`` (or of those
    ``names``), to query through whichever costs least. Options are :func:`open_index`'s."""
    first = locate(source, index, DEFAULT_NAME, existing=False, storage_options=storage_options)
    first.require_lake()
    chosen = index_names(first.storage, first.home) if names is None else list(dict.fromkeys(names))
    found: list[Index] = []
    damaged: list[tuple[Location, IndexLogUnreadableError]] = []
    for name in chosen:
        location = locate(first.source, index, name)
        versions = IndexLog(location.storage, location.index_dir)
        if versions.versions():
            try:
                found.append(Index(location, versions.latest(), lake_listing=lake_listing))
            except IndexLogUnreadableError as error:
                if names is not None:  # asked for: its stand-in reads every file
                    found.append(Index.unreadable(location, error, lake_listing))
                    continue
                damaged.append((location, error))  # the others answer without it
                log.warning("index %r is left out: %s", name, error)
        elif names is not None:
            raise IndexNotFoundError(f"no lakeseek index {name!r} at {first.home}")
    if not found and damaged:  # never a failed query: every file is read, and the plan says why
        return IndexSet([Index.unreadable(*damaged[0], lake_listing)])
    if not found:
        raise IndexNotFoundError(f"no lakeseek index at {first.storage.shown(first.home)}: create one first")
    return IndexSet(found)


class IndexSet:
    """Several indexes of one lake, each query planned with all of them (see the module)."""

    def __init__(self, indexes: list[Index]) -> None:
        self.indexes = indexes

    def __repr__(self) -> str:
        return f"IndexSet({', '.join(f'{i.name}:{i.root.kind}' for i in self.indexes)})"

    @property
    def lake(self):
        return self.indexes[0].lake

    def forget_listing(self) -> None:
        for index in self.indexes:
            index.forget_listing()

    def reload(self) -> IndexSet:
        return IndexSet([index.reload() for index in self.indexes])

    @again_when_files_change
    def plan(self, where: str | Predicate) -> Plan:
        """The files a query with this predicate reads, through the cheapest index."""
        weighed = self._weigh(where)
        return self._choose(weighed)[1]

    def files(self, where: str) -> list[str]:
        return [self.lake.shown(path) for path in self.plan(where).files]

    def read(self, where: str, columns: list[str] | str | None = None) -> pa.Table:
        return self.query(where, columns)[0]

    @again_when_files_change
    def query(self, where: str, columns: list[str] | str | None = None) -> tuple[pa.Table, Plan]:
        """The rows matching ``where``, read from the files the cheapest index leaves, and its plan."""
        binder = _Binder(where)
        for index in self.indexes:  # an index carrying the rows answers without the lake: nothing is cheaper
            if index.kind_reader.carries_rows:
                state = index.lake_state()
                covered = index.covered_read(binder.bound(index, state), columns, state)
                if covered is not None:
                    return covered[0], dataclasses.replace(covered[1], index=index.name)
        weighed = self._weigh(binder)
        position, chosen = self._choose(weighed)
        best = weighed[position]
        return best.index.read_files(chosen.files, best.predicate, columns, chosen.row_groups, best.state), chosen

    @again_when_files_change
    def explain(self, where: str, *, analyze: bool = False, what_if: Sequence[str | IndexSpec] = ()) -> Explanation:
        """How the query runs (:meth:`Index.explain`), with every index weighed: its estimate,
        the index reads its lookups made, the files it left and (``analyze``) how many of
        those hold no matching row; ``what_if``, as :meth:`Index.explain`'s."""
        started = time.perf_counter()
        specs = specs_of(what_if)
        weighed = self._weigh(where)
        runs = []
        for each in weighed:
            with counting() as io:
                runs.append((each.prepared.run(), io.reads, io.bytes_read))
        position, plan = self._choose(weighed, [plan for plan, _, _ in runs])
        best = weighed[position]
        matching = self._files_with_matches(best, {p for run, _, _ in runs for p in run.files}) if analyze else None
        alternatives = []
        for each, (run, reads, nbytes) in zip(weighed, runs, strict=True):
            cost = each.prepared.cost
            alternatives.append(
                Alternative(
                    index=each.index.name,
                    kind=each.index.root.kind,
                    version=each.index.version,
                    chosen=each is best,
                    estimated=each.prepared.expected,
                    estimated_files=cost.candidates + run.unindexed_files if cost else None,
                    candidate_files=len(run.files),
                    index_reads=reads,
                    index_bytes=nbytes,
                    false_positives=None if matching is None else len(set(run.files) - matching),
                    why_not=run.reason,
                )
            )
        alternatives.sort(key=lambda a: (not a.chosen, a.estimated))
        _, reads, nbytes = runs[position]
        state = best.state
        sizes = {path: state.files[path].size for path in plan.files}
        result = explanation(where, best.index.name, best.index.version, plan, sizes, reads, nbytes)
        covered = [(each.index.name, each.index.covered_note(each.predicate, each.state)) for each in weighed]
        notes = (*result.notes, *(f"index '{name}': {note}" for name, note in covered if note))
        result = dataclasses.replace(result, alternatives=tuple(alternatives), notes=notes)
        if specs:
            result = dataclasses.replace(result, what_if=best.index.imagine(specs, best.predicate, state))
        if not analyze:
            return result
        rows = best.index.read_files(plan.files, best.predicate, None, plan.row_groups, state).num_rows
        return dataclasses.replace(result, rows=rows, seconds=time.perf_counter() - started)

    # -- internals --------------------------------------------------------------------------
    def _weigh(self, where: str | Predicate | _Binder) -> list[_Weighed]:
        binder = where if isinstance(where, _Binder) else _Binder(where)
        weighed = []
        for index in self.indexes:
            state = index.lake_state()
            predicate = binder.bound(index, state)
            weighed.append(_Weighed(index, state, predicate, index.prepare(predicate, state)))
        return weighed

    def _choose(self, weighed: list[_Weighed], plans: list[Plan] | None = None) -> tuple[int, Plan]:
        """The position and plan of the cheapest estimate; past an index that turns out damaged
        or vacuumed (its plan reads every file) to the next. ``plans``: those already run."""
        ranked = sorted(
            range(len(weighed)), key=lambda i: (weighed[i].prepared.expected, not weighed[i].index.root.is_active)
        )
        for position in ranked:
            plan = plans[position] if plans is not None else weighed[position].prepared.run()
            plan = dataclasses.replace(plan, index=weighed[position].index.name)
            if plan.fallback not in (Fallback.DAMAGED, Fallback.VACUUMED):
                break
        return position, plan

    @staticmethod
    def _files_with_matches(weighed: _Weighed, paths: set[str]) -> set[str]:
        """Which of ``paths`` hold a row the predicate keeps (a count per file, no column read)."""
        index, state = weighed.index, weighed.state
        return {path for path in paths if index.read_files([path], weighed.predicate, [], None, state).num_rows}


class _Binder:
    """A predicate parsed once and bound once per schema: the indexes of a lake mostly see the
    same schema, and binding (literals to the columns' types) costs as much as a lookup."""

    def __init__(self, where: str | Predicate) -> None:
        self.tree = parse_where(where) if isinstance(where, str) else where
        self.bound_by_schema: list[tuple[pa.Schema, Predicate]] = []

    def bound(self, index: Index, state: LakeState) -> Predicate:
        schema = index.schema_of(state)
        for seen, predicate in self.bound_by_schema:
            if seen is schema or seen.equals(schema, check_metadata=True):
                return predicate
        predicate = index.bind(self.tree, state)
        self.bound_by_schema.append((schema, predicate))
        return predicate
