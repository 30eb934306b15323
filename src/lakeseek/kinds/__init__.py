"""Kinds of index, by name: ``sorted`` (the exact value -> file index), ``skipping``
(per-file sketches), ``cuckoo`` (aligned per-file cuckoo filters) and ``covering`` (sorted
copies of rows, answering reads without the lake) are built in; another kind registers
itself with :func:`register_kind`."""

from __future__ import annotations

from lakeseek.exceptions import IndexFormatError, LakeseekError
from lakeseek.format.root import IndexContent
from lakeseek.kinds.base import IndexKind
from lakeseek.kinds.covering import CoveringKind
from lakeseek.kinds.cuckoo import CuckooKind
from lakeseek.kinds.skipping import SkippingKind
from lakeseek.kinds.sorted_index import SortedKind

DEFAULT_KIND = "sorted"
_KINDS: dict[str, IndexKind] = {}


def register_kind(kind: IndexKind) -> None:
    """Make ``kind`` known by its name: ``create_index(..., kind=NAME)`` builds one, and roots
    of that kind are read with it."""
    _KINDS[kind.name] = kind


def kind_named(name: str) -> IndexKind:
    """The kind called ``name``, or a LakeseekError naming the known ones."""
    found = _KINDS.get(name)
    if found is None:
        raise LakeseekError(f"unknown index kind {name!r}: use one of {', '.join(sorted(_KINDS))}")
    return found


def known_kinds() -> list[str]:
    return sorted(_KINDS)


def decode_content(kind: str, raw: dict) -> IndexContent:
    """A root's index part, read by its kind (see :meth:`lakeseek.format.root.Root.from_json`)."""
    found = _KINDS.get(kind)
    if found is None:
        raise IndexFormatError(f"the index is of kind {kind!r}, which this lakeseek does not know: upgrade lakeseek")
    return found.decode(raw)


register_kind(SortedKind())
register_kind(SkippingKind())
register_kind(CuckooKind())
register_kind(CoveringKind())

__all__ = ["DEFAULT_KIND", "IndexKind", "decode_content", "kind_named", "known_kinds", "register_kind"]
