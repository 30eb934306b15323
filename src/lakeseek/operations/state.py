"""``delete`` and ``restore``: a soft delete, which queries respect and ``restore`` undoes."""

from __future__ import annotations

from collections.abc import Mapping

from lakeseek.commits.transaction import DEFAULT_COMMIT_TRIES
from lakeseek.exceptions import LakeseekError
from lakeseek.format.actions import SetState, StateIs, Transaction
from lakeseek.format.root import ACTIVE, DELETED, Root
from lakeseek.index import Index
from lakeseek.location import LakeLike, Location
from lakeseek.operations.protocol import existing, operation


def delete_index(
    source: LakeLike,
    *,
    index: str | None = None,
    name: str | None = None,
    commit_tries: int = DEFAULT_COMMIT_TRIES,
    storage_options: Mapping[str, object] | None = None,
) -> Index:
    """Soft-delete: queries stop using the index; ``restore`` brings it back, ``vacuum`` clears it."""
    return _set_state(existing(source, index, name, storage_options), DELETED, commit_tries)


def restore_index(
    source: LakeLike,
    *,
    index: str | None = None,
    name: str | None = None,
    commit_tries: int = DEFAULT_COMMIT_TRIES,
    storage_options: Mapping[str, object] | None = None,
) -> Index:
    """Undo a ``delete``."""
    return _set_state(existing(source, index, name, storage_options), ACTIVE, commit_tries)


def _set_state(location: Location, state: str, commit_tries: int) -> Index:
    verb = "delete" if state == DELETED else "restore"

    def prepare(base: Root) -> Transaction:
        if base.state == state:
            raise LakeseekError(f"index '{location.name}' is already {state}")
        return Transaction(verb, (SetState(state),), (StateIs(base.state),))

    with operation(location, verb, commit_tries) as op:
        root = op.transact(prepare)
    return Index(location, root)
