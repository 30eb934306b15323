"""Every error lakeseek raises on purpose derives from :class:`LakeseekError`.

The CLI turns these into one-line messages; storage failures that are not about the
index (a missing lake, a permission problem) stay builtins (``FileNotFoundError``,
``PermissionError``) and are reported the same way.
"""

from __future__ import annotations

import re

# Control characters as Python escapes them: a column name or a literal holding a line break
# would break a message over lines (the CLI showed the first, cut in the middle of a name), and
# an ESC in a value shown in a table would steer the terminal. The Unicode line and paragraph
# separators break lines too, and its direction controls reorder the text shown after them.
_BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
CONTROL_ESCAPES = {
    code: repr(chr(code))[1:-1] for code in (*range(32), *range(127, 160), 0x2028, 0x2029, *_BIDI_CONTROLS)
}


def one_line(error: BaseException) -> str:
    """An error's message in one line: its first line, and where an object store's client put
    the store's XML error body after it, that body's code and message (a missing bucket said
    only "404 Not Found: <?xml ...?>"); the client's debug dump that follows is left out."""
    text = str(error).strip()
    if not text:
        return type(error).__name__
    first = text.splitlines()[0].strip()
    if "<?xml" in first:
        first = first[: first.index("<?xml")].rstrip(" :")
    code = re.search(r"<Code>([^<]*)</Code>", text)
    if code is not None:
        said = re.search(r"<Message>([^<]*)</Message>", text)
        first += f" ({code.group(1)}{': ' + said.group(1) if said is not None else ''})"
    return first


class LakeseekError(Exception):
    """Base class of lakeseek's errors: one line each."""

    def __str__(self) -> str:
        return super().__str__().translate(CONTROL_ESCAPES)


class LakeNotFoundError(LakeseekError, FileNotFoundError):
    """The source path does not exist or holds no data files."""


class IndexNotFoundError(LakeseekError, FileNotFoundError):
    """No committed index at the given location."""


class IndexAlreadyExistsError(LakeseekError):
    """``create`` found an index already committed at the location."""


class CommitFailedError(LakeseekError):
    """Another writer committed the same log version first."""


class CommitOutcomeUnknownError(LakeseekError):
    """A commit's put got no answer and its place holds no entry yet: it may still be made (a
    slow store finishing the write), so the operation keeps its files (vacuum removes them if
    no version ever references them)."""


class OperationCancelledError(LakeseekError):
    """``cancel`` stopped the operation before it committed."""


class IndexCorruptError(LakeseekError):
    """An index or log file is truncated, garbled or missing."""


class IndexLogUnreadableError(IndexCorruptError):
    """No entry of an index's log reads whole: queries read every file; only removing the
    index directory and creating the index again repairs it (a refresh has no root to build on)."""


class LayoutCorruptError(IndexCorruptError):
    """An OTree layout's newest log entry is damaged: its rows cannot be listed, and no index
    refresh rebuilds them."""


class IndexFormatError(LakeseekError):
    """The index was written by an unknown (newer) format version."""


class UnsupportedColumnError(LakeseekError):
    """A column cannot be indexed (unknown name or unsupported type)."""


class PredicateError(LakeseekError):
    """A ``where`` predicate cannot be used."""


class PredicateParseError(PredicateError):
    """The predicate is not valid SQL."""


class UnsupportedPredicateError(PredicateError):
    """The predicate is valid SQL but uses a construct lakeseek does not evaluate."""


class UnknownColumnError(PredicateError):
    """The predicate names a column the lake does not have."""


class PredicateTypeError(PredicateError):
    """A literal does not fit the type of the column it is compared with."""


class SparkJobError(LakeseekError):
    """A Spark job run by lakeseek failed."""


class DataFileError(LakeseekError):
    """A data file of the lake cannot be read: not Parquet, damaged, or removed during the query."""


class DataFileChangedError(DataFileError):
    """A data file changed or vanished while a query read it: the query, run again, lists the
    lake anew (reads run again by themselves a few times first)."""


class IncompatibleSchemaError(LakeseekError):
    """A data file holds a column in a type that no type holds exactly along with the lake's
    type of it (a string where the other files hold integers, say): see ``lakeseek.lake.schemas``."""


class UnsupportedStorageError(LakeseekError):
    """The storage cannot do what lakeseek needs there (an atomic put-if-absent commit)."""


class UnsupportedLakeError(LakeseekError):
    """The lake is of a kind lakeseek cannot read exactly (a table format it does not support yet)."""


class LakeMetadataError(LakeseekError):
    """A table format's metadata could not be read (damaged, or written in a way its library
    refuses)."""


class InvalidArgumentError(LakeseekError, ValueError):
    """An argument of a lakeseek function is of the wrong type or out of range."""
