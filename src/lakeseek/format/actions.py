"""Commits as data: what one commit changes (actions) and what it needs to still hold (requirements).

An operation prepares its work on the version it read and describes the change as a
:class:`Transaction`. Committing checks the requirements against the latest version, applies
the actions to it, and writes the result as the next version with put-if-absent; when another
writer committed first, the same check runs against that writer's version: the transaction
applies on top of it when its requirements still hold, and is prepared again when they do not
(:mod:`lakeseek.commits.transaction`). Each log entry records the actions that made it, so the
log can say what changed since any version (:meth:`lakeseek.commits.log.IndexLog.history`).

This module holds the actions and requirements every kind of index shares (the lineage, the
schema, the state); a kind adds its own in its package (``lakeseek.kinds.sorted_index.actions``).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa

from lakeseek.format.root import IndexContent, LineagePart, LineageSet, Root


class Action(ABC):
    """One change to a root."""

    name: ClassVar[str]
    # Whether it changes which data files the index covers: work prepared on the data as it
    # was (files indexed, numbered) no longer fits the new version.
    changes_data: ClassVar[bool] = False

    @abstractmethod
    def apply(self, root: Root) -> Root: ...

    def describe(self) -> dict:
        """The action as the log records it: ``{"action": name, ...}``, a summary for people and
        for ``history`` (the new root itself is in the entry)."""
        return {"action": self.name}


class Requirement(ABC):
    """Something a transaction prepared on one version needs of the version it commits on."""

    @abstractmethod
    def holds(self, root: Root) -> bool: ...


class ContentAction(Action):
    """An action on the kind's part of the root."""

    def apply(self, root: Root) -> Root:
        return dataclasses.replace(root, content=self.apply_content(root.content))

    @abstractmethod
    def apply_content(self, content: IndexContent) -> IndexContent: ...


@dataclass(frozen=True)
class Transaction:
    """A commit as data: its operation's name, its actions, and their requirements."""

    operation: str
    actions: tuple[Action, ...]
    requirements: tuple[Requirement, ...] = ()

    def holds(self, latest: Root) -> bool:
        return all(requirement.holds(latest) for requirement in self.requirements)

    def apply(self, latest: Root, version: int, timestamp_ms: int) -> Root:
        """The root of ``version``: ``latest`` with the actions applied."""
        root = dataclasses.replace(latest, version=version, timestamp_ms=timestamp_ms, operation=self.operation)
        for action in self.actions:
            root = action.apply(root)
        if any(action.changes_data for action in self.actions):
            root = dataclasses.replace(root, data_version=version)
        return root


# -- requirements ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DataVersionIs(Requirement):
    """No commit changed the covered files since: files indexed and numbered on them still fit."""

    data_version: int

    def holds(self, root: Root) -> bool:
        return root.data_version == self.data_version


@dataclass(frozen=True)
class ColumnsAre(Requirement):
    columns: frozenset[str]

    def holds(self, root: Root) -> bool:
        return set(root.columns) == self.columns


@dataclass(frozen=True)
class StateIs(Requirement):
    state: str

    def holds(self, root: Root) -> bool:
        return root.state == self.state


@dataclass(frozen=True)
class LineageStartsWith(Requirement):
    """The lineage parts an operation read are still the first ones, and the tombstones it read are still there."""

    parts: tuple[LineagePart, ...]
    removed: frozenset[int]

    def holds(self, root: Root) -> bool:
        lineage = root.lineage
        return lineage.parts[: len(self.parts)] == self.parts and self.removed <= lineage.removed


# -- actions ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AddFiles(Action):
    """Files indexed by this commit (numbered from the root's next file id on); files a quick
    refresh had recorded keep their ids."""

    name: ClassVar[str] = "add_files"
    changes_data: ClassVar[bool] = True
    part: LineagePart
    next_file_id: int

    def apply(self, root: Root) -> Root:
        lineage = dataclasses.replace(
            root.lineage, parts=(*root.lineage.parts, self.part), next_file_id=self.next_file_id
        )
        return dataclasses.replace(root, lineage=lineage)

    def describe(self) -> dict:
        return {"action": self.name, "files": self.part.files, "bytes": self.part.lake_bytes}


@dataclass(frozen=True)
class RecordFiles(Action):
    """Files recorded without indexing them (a quick refresh): every query reads them. None: none."""

    name: ClassVar[str] = "record_files"
    changes_data: ClassVar[bool] = True
    part: LineagePart | None
    next_file_id: int

    def apply(self, root: Root) -> Root:
        lineage = dataclasses.replace(root.lineage, pending=self.part, next_file_id=self.next_file_id)
        return dataclasses.replace(root, lineage=lineage)

    def describe(self) -> dict:
        return {"action": self.name, "files": self.part.files if self.part else 0}


@dataclass(frozen=True)
class RemoveFiles(Action):
    """Indexed files removed or rewritten in the lake: their ids become tombstones."""

    name: ClassVar[str] = "remove_files"
    changes_data: ClassVar[bool] = True
    file_ids: frozenset[int]

    def apply(self, root: Root) -> Root:
        lineage = dataclasses.replace(root.lineage, removed=root.lineage.removed | self.file_ids)
        return dataclasses.replace(root, lineage=lineage)

    def describe(self) -> dict:
        return {"action": self.name, "files": len(self.file_ids)}


@dataclass(frozen=True)
class ReplaceFiles(Action):
    """Every file indexed anew (a full refresh), numbered from 0."""

    name: ClassVar[str] = "replace_files"
    changes_data: ClassVar[bool] = True
    part: LineagePart

    def apply(self, root: Root) -> Root:
        return dataclasses.replace(root, lineage=LineageSet((self.part,), frozenset(), self.part.files))

    def describe(self) -> dict:
        return {"action": self.name, "files": self.part.files, "bytes": self.part.lake_bytes}


@dataclass(frozen=True)
class CompactFiles(Action):
    """The first ``replaced`` lineage parts as one, without the tombstones ``dropped`` (whose
    entries the index no longer holds)."""

    name: ClassVar[str] = "compact_files"
    replaced: int
    part: LineagePart
    dropped: frozenset[int]

    def apply(self, root: Root) -> Root:
        lineage = root.lineage
        parts = (self.part, *lineage.parts[self.replaced :])
        return dataclasses.replace(
            root, lineage=dataclasses.replace(lineage, parts=parts, removed=lineage.removed - self.dropped)
        )

    def describe(self) -> dict:
        return {"action": self.name, "parts": self.replaced, "tombstones": len(self.dropped)}


@dataclass(frozen=True)
class SetSchema(Action):
    """The lake's schema, and its partition columns where they changed (None: as they were)."""

    name: ClassVar[str] = "set_schema"
    schema: pa.Schema
    spark_schema: str
    partition_columns: tuple[str, ...] | None = None

    def apply(self, root: Root) -> Root:
        partitions = root.partition_columns if self.partition_columns is None else self.partition_columns
        return dataclasses.replace(
            root, schema=self.schema, spark_schema=self.spark_schema, partition_columns=partitions
        )

    def describe(self) -> dict:
        described = {"action": self.name, "columns": self.schema.names}
        if self.partition_columns is not None:
            described["partition_columns"] = list(self.partition_columns)
        return described


@dataclass(frozen=True)
class SetSourceVersion(Action):
    """The lake source's version the lineage now describes (None: the source has no versions)."""

    name: ClassVar[str] = "set_source_version"
    source_version: str | None

    def apply(self, root: Root) -> Root:
        return dataclasses.replace(root, source_version=self.source_version)

    def describe(self) -> dict:
        return {"action": self.name, "source_version": self.source_version}


@dataclass(frozen=True)
class SetState(Action):
    name: ClassVar[str] = "set_state"
    state: str

    def apply(self, root: Root) -> Root:
        return dataclasses.replace(root, state=self.state)

    def describe(self) -> dict:
        return {"action": self.name, "state": self.state}


@dataclass(frozen=True)
class SetContent(ContentAction):
    """The kind's whole part replaced (a full refresh rewrites every index file)."""

    name: ClassVar[str] = "set_index"
    content: IndexContent

    def apply_content(self, content: IndexContent) -> IndexContent:
        return self.content

    def describe(self) -> dict:
        return {"action": self.name, "columns": list(self.content.columns)}


@dataclass(frozen=True)
class CancelOperations(Action):
    """Operations cancelled. The root is unchanged: the commit orders the cancel among the
    operations' own commits (see :func:`lakeseek.operations.vacuum.cancel_operations`)."""

    name: ClassVar[str] = "cancel_operations"
    operation_ids: tuple[str, ...]

    def apply(self, root: Root) -> Root:
        return root

    def describe(self) -> dict:
        return {"action": self.name, "operations": list(self.operation_ids)}
