"""The lake's schema now: files that disagree on a column's type, columns added by new files,
and column names spelled in another case.

The rule (README, "The lake's schema"): lakeseek reads the lake with the schema
``spark.read.option("mergeSchema", "true").parquet(LAKE)`` infers, where Spark can infer one:

* **Columns** are matched by name case-insensitively, as Spark does by default; an exact
  spelling wins when a file holds several (``a`` and ``A``, written with
  ``spark.sql.caseSensitive=true``). The first spelling seen names the column; the others
  are recorded (:data:`SPELLINGS`) so that files spelling it another way are read under it.
* **Types** of one column in different files widen to a type that holds every value of both
  exactly (:func:`widen`): integers to the wider integer, decimals to the decimal with the
  most integer and fraction digits, timestamps to the finer unit, float to double, ...; Spark
  reads each of those files as the wider type. Any other pair (a string and an int, a decimal
  of 40 digits) is refused with an error naming the file and both types: no value is ever cast
  into another. Text files merge as their format's reader merges them instead
  (:meth:`lakeseek.lake.formats.DataFormat.common_type`: Spark's CSV inference takes INT and
  DOUBLE to DOUBLE, anything and STRING to STRING), since their values are read from text.
* **New columns** (in files added or rewritten since indexing) are added after the index's
  recorded columns, before the partition columns, in the order of the files' paths.
* **Partition columns** take the type their lake source gives them now (a directory's:
  :mod:`lakeseek.sources.partitions`, so ``p=2.5`` after ``p=1`` makes ``p`` a DOUBLE everywhere,
  as in Spark).

The index's root records the schema its indexed files merge to; a query merges in the footers
of the files it reads without the index (new, changed or recorded ones).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from lakeseek.exceptions import IncompatibleSchemaError, UnsupportedLakeError

# Schema metadata: {column: [its other spellings in some files]}, for columns named differently
# (in case only) by some files.
SPELLINGS = b"lakeseek.spellings"
# Field metadata: a column's id, where the lake matches its files' columns by id (an Iceberg
# table's field ids): the same name with another id is another column.
COLUMN_ID = b"PARQUET:field_id"
MAX_DECIMAL_PRECISION = 38


# -- types -------------------------------------------------------------------------------------------
_SIGNED = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
_UNSIGNED = [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]
_UNITS = ["s", "ms", "us", "ns"]
_INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}  # Spark's DecimalType.forType: a LONG needs 20 digits
_EXACT_IN_DOUBLE = (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16())


def column_ids(field: pa.Field) -> tuple[bytes, ...]:
    """The ids (:data:`COLUMN_ID`) of a column and of its nested fields; none where the lake
    does not record them."""
    found = [field.metadata[COLUMN_ID]] if field.metadata and COLUMN_ID in field.metadata else []
    t = field.type
    if pa.types.is_map(t):
        children = [t.key_field, t.item_field]
    elif pa.types.is_struct(t):
        children = [t.field(i) for i in range(t.num_fields)]
    else:
        children = [t.value_field] if hasattr(t, "value_field") else []
    for child in children:
        found.extend(column_ids(child))
    return tuple(found)


def same_column(before: pa.Schema, after: pa.Schema, column: str) -> bool:
    """Whether ``column`` of ``after`` holds what it held in ``before``: values of the same type,
    and the same column where the lake matches its files' columns by id (a table that renamed
    another column to this name, or dropped it and added another of its name, has another
    column under it). False when either schema lacks it."""
    if column not in before.names or column not in after.names:
        return False
    old, new = before.field(column), after.field(column)
    return _values(old.type).equals(_values(new.type)) and column_ids(old) == column_ids(new)


def _values(arrow_type: pa.DataType) -> pa.DataType:
    return arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type


def _range(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    return (0, 2**bits - 1) if pa.types.is_unsigned_integer(t) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def widen(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type that holds every value of ``a`` and of ``b`` exactly and that Spark reads
    files of either type as; None when there is none."""
    a, b = _values(a), _values(b)
    if a.equals(b):
        return a
    if pa.types.is_null(a) or pa.types.is_null(b):
        return b if pa.types.is_null(a) else a
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        low, high = min(_range(a)[0], _range(b)[0]), max(_range(a)[1], _range(b)[1])
        unsigned = pa.types.is_unsigned_integer(a) and pa.types.is_unsigned_integer(b)
        family = _UNSIGNED if unsigned else _SIGNED
        return next((t for t in family if _range(t)[0] <= low and high <= _range(t)[1]), None)
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        return wider_decimal(a, b)
    if pa.types.is_floating(a) and pa.types.is_floating(b):
        return pa.float64() if not (pa.types.is_float16(a) or pa.types.is_float16(b)) else None
    if pa.types.is_integer(a) or pa.types.is_integer(b):
        number, other = (a, b) if pa.types.is_integer(a) else (b, a)
        # Spark reads INT32 columns as DOUBLE, and a DOUBLE holds every 32-bit integer.
        return pa.float64() if pa.types.is_float64(other) and number in _EXACT_IN_DOUBLE else None
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        if (a.tz is None) != (b.tz is None):
            return None  # TIMESTAMP_NTZ and TIMESTAMP are different values
        unit = max(a.unit, b.unit, key=_UNITS.index)
        return pa.timestamp(unit, tz=None if a.tz is None else (a.tz if a.tz == b.tz else "UTC"))
    if pa.types.is_date32(a) or pa.types.is_date32(b):  # a DATE is a TIMESTAMP_NTZ at midnight (Spark 4)
        other = b if pa.types.is_date32(a) else a
        return other if pa.types.is_timestamp(other) and other.tz is None else None
    if _is_string(a) and _is_string(b):
        return pa.large_string() if pa.types.is_large_string(a) or pa.types.is_large_string(b) else pa.string()
    if _is_binary(a) and _is_binary(b):
        return pa.large_binary() if pa.types.is_large_binary(a) or pa.types.is_large_binary(b) else pa.binary()
    return _merged_nested(a, b)


def _merged_nested(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """Structs and lists as Spark's mergeSchema merges them: a struct takes the fields of both
    (those only one file has are NULL in the other's rows), a list its element's merge; a
    nested value keeps its type (Spark widens none inside them), but for how Arrow holds it
    (``string`` and ``large_string``, ``list`` and ``large_list``: one Parquet type)."""
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        others = {field.name: field for field in b}
        folded = {field.name.lower() for field in a}
        if len({name.lower() for name in others}) != b.num_fields or len(folded) != a.num_fields:
            return None  # a name twice (in any case): no field to match it with
        if any(name.lower() in folded and name not in a.names for name in others):
            # Spark matches nested fields in any case, and Arrow reads a file's field by its exact name.
            return None
        fields = []
        for field in a:
            other = others.pop(field.name, None)
            merged = field.type if other is None else _same_values(field.type, other.type)
            if merged is None:
                return None
            fields.append(field.with_type(merged))
        return pa.struct([*fields, *others.values()])
    lists = (pa.types.is_list, pa.types.is_large_list)
    if any(is_list(a) for is_list in lists) and any(is_list(b) for is_list in lists):
        element = _same_values(a.value_type, b.value_type)
        if element is None:
            return None
        field = a.value_field.with_type(element)
        return pa.large_list(field) if pa.types.is_large_list(a) or pa.types.is_large_list(b) else pa.list_(field)
    return None


def _same_values(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The merge of two types of one nested value: equal ones, other Arrow layouts of the same
    Parquet type, or nested types that merge."""
    if a.equals(b):
        return a
    if pa.types.is_null(a) or pa.types.is_null(b):
        return b if pa.types.is_null(a) else a
    if (_is_string(a) and _is_string(b)) or (
        _is_binary(a) and _is_binary(b) and not (pa.types.is_fixed_size_binary(a) or pa.types.is_fixed_size_binary(b))
    ):
        return widen(a, b)
    return _merged_nested(a, b)


def _case_folded(t: pa.DataType) -> pa.DataType:
    """``t`` with the names of its nested fields in lower case."""
    if pa.types.is_struct(t):
        return pa.struct([field.with_name(field.name.lower()).with_type(_case_folded(field.type)) for field in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element = t.value_field.with_type(_case_folded(t.value_type))
        return pa.large_list(element) if pa.types.is_large_list(t) else pa.list_(element)
    return t


def wider_decimal(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    def digits(t: pa.DataType) -> tuple[int, int] | None:
        if pa.types.is_decimal(t):
            return t.precision - t.scale, t.scale
        if pa.types.is_integer(t):
            return _INTEGER_DIGITS[t.bit_width], 0
        return None

    left, right = digits(a), digits(b)
    if left is None or right is None:
        return None
    integer, scale = max(left[0], right[0]), max(left[1], right[1])
    if integer + scale > MAX_DECIMAL_PRECISION:
        return None
    return pa.decimal128(integer + scale, scale)


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


# -- names -------------------------------------------------------------------------------------------
def match_columns(wanted: Sequence[str], names: Sequence[str]) -> dict[str, str]:
    """For each ``wanted`` column, the name a file (with columns ``names``) holds it under:
    the same spelling, else the only one that differs in case alone and that no other wanted
    column spells exactly. Columns the file lacks are left out."""
    present = set(names)
    exact = {name for name in wanted if name in present}
    free: dict[str, list[str]] = {}
    for name in names:
        if name not in exact:
            free.setdefault(name.lower(), []).append(name)
    found = {}
    for name in wanted:
        if name in exact:
            found[name] = name
        elif len(free.get(name.lower(), ())) == 1:
            found[name] = free[name.lower()][0]
    return found


def spellings(schema: pa.Schema) -> dict[str, list[str]]:
    """Columns that some files spell another way, with those spellings."""
    raw = (schema.metadata or {}).get(SPELLINGS)
    return json.loads(raw) if raw else {}


def without_spellings(schema: pa.Schema) -> pa.Schema:
    return _with_spellings(schema, {})


def _with_spellings(schema: pa.Schema, found: Mapping[str, list[str]]) -> pa.Schema:
    metadata = {k: v for k, v in (schema.metadata or {}).items() if k != SPELLINGS}
    if found:
        metadata[SPELLINGS] = json.dumps({k: sorted(v) for k, v in sorted(found.items())}).encode()
    if metadata == (schema.metadata or {}):
        return schema
    return schema.with_metadata(metadata) if metadata else schema.remove_metadata()


# -- merging files' schemas --------------------------------------------------------------------------
def merge_file_schema(
    schema: pa.Schema,
    file_schema: pa.Schema,
    source: str,
    partition_columns: Sequence[str],
    common_type: Callable[[pa.DataType, pa.DataType], pa.DataType | None] = widen,
) -> pa.Schema:
    """``schema`` with one data file's columns merged in: wider types where the file's are
    wider (``common_type``: the files' format's merge, by default :func:`widen`), its new
    columns added before the partition columns; IncompatibleSchemaError (naming ``source``)
    when a column's types have no common type."""
    data = [name for name in schema.names if name not in partition_columns]
    matched = match_columns(data, file_schema.names)
    by_file = {file_name: name for name, file_name in matched.items()}
    known = dict(spellings(schema))
    fields = list(schema)
    added: list[pa.Field] = []
    lowered_partitions = {name.lower() for name in partition_columns}
    for field in file_schema:
        name = by_file.get(field.name)
        if name is None:
            if field.name in partition_columns or field.name.lower() in lowered_partitions:
                continue  # the directory's value wins, as in Spark
            if any(f.name == field.name for f in added):
                continue
            added.append(pa.field(field.name, field.type))
            continue
        position = schema.get_field_index(name)
        current = fields[position]
        wider = common_type(current.type, field.type)
        if wider is None:
            if widen(_case_folded(current.type), _case_folded(field.type)) is not None:
                why = "its nested fields differ from theirs in case alone, and lakeseek reads a field by its exact name"
            else:
                why = "no type holds both exactly"
            raise IncompatibleSchemaError(
                f"data file {source} holds column '{field.name}' as {field.type}, but the lake's other files "
                f"hold it as {current.type}: {why}; rewrite the file with the lake's type"
            )
        if not wider.equals(current.type):
            fields[position] = current.with_type(wider)
        if field.name != name and field.name not in known.get(name, []):
            known[name] = [*known.get(name, []), field.name]
    if added:
        first_partition = min((schema.get_field_index(p) for p in partition_columns if p in schema.names), default=None)
        cut = len(fields) if first_partition is None else first_partition
        fields = fields[:cut] + added + fields[cut:]
    return _with_spellings(pa.schema(fields, metadata=schema.metadata), known)


def merge_schemas(
    schema: pa.Schema,
    files: Iterable[tuple[str, pa.Schema]],
    partition_columns: Sequence[str],
    common_type: Callable[[pa.DataType, pa.DataType], pa.DataType | None] = widen,
) -> pa.Schema:
    for path, found in files:
        schema = merge_file_schema(schema, found, path, partition_columns, common_type)
    return schema


def with_partition_types(schema: pa.Schema, types: Mapping[str, pa.DataType]) -> pa.Schema:
    for name, partition_type in types.items():
        position = schema.get_field_index(name)
        if position >= 0 and not schema.field(position).type.equals(partition_type):
            schema = schema.set(position, schema.field(position).with_type(partition_type))
    return schema


def current_partition_types(
    recorded: pa.Schema, columns: Sequence[str], then: Mapping[str, pa.DataType], now: Mapping[str, pa.DataType]
) -> dict[str, pa.DataType]:
    """The partition columns' types now: the lake source's types for its files now (``now``),
    for each column whose recorded type (Spark's, when the index was built) is the source's
    type for the files the index was built on (``then``). A column whose recorded type the
    source does not reproduce (say Spark's ``spark.sql.sources.partitionColumnTypeInference``
    was off) keeps it."""
    types = {}
    for column in columns:
        if column not in recorded.names or column not in now:
            continue
        old = recorded.field(column).type
        if column not in then or then[column].equals(old):
            types[column] = now[column]
    return types


# -- Spark types -------------------------------------------------------------------------------------
_SPARK_TYPES = {
    pa.int8(): "byte",
    pa.int16(): "short",
    pa.int32(): "integer",
    pa.int64(): "long",
    pa.uint8(): "short",
    pa.uint16(): "integer",
    pa.uint32(): "long",
    pa.uint64(): "decimal(20,0)",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.bool_(): "boolean",
    pa.date32(): "date",
    pa.null(): "void",
}


def spark_type(arrow_type: pa.DataType) -> Any:
    """The Spark type (its JSON form) Spark reads a Parquet column of ``arrow_type`` as."""
    t = _values(arrow_type)
    for known, name in _SPARK_TYPES.items():
        if t.equals(known):
            return name
    if pa.types.is_decimal(t):  # past 38 digits, one Spark refuses to read (to_spark says so)
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_duration(t):  # Parquet has no duration: the INT64 pyarrow stores it as
        return "long"
    if pa.types.is_time(t):  # Spark refuses to read a time of day (pyspark has a type for it)
        raise UnsupportedLakeError(f"the lake has a column of type {t}, which Spark has no type for")
    if _is_string(t):
        return "string"
    if _is_binary(t):
        return "binary"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    from pyspark.sql.pandas.types import from_arrow_type

    try:
        return from_arrow_type(t).jsonValue()
    except TypeError as error:  # pyspark's PySparkTypeError: a type Spark has no counterpart of
        raise UnsupportedLakeError(f"the lake has a column of type {t}, which Spark has no type for") from error


def spark_schema_json(
    schema: pa.Schema, partition_columns: Sequence[str], recorded: pa.Schema, recorded_json: str
) -> str:
    """The Spark schema (JSON) of the lake read with ``schema``: the recorded Spark field of each
    column whose type did not change, Spark's type for the others, in ``schema``'s order."""
    fields = {field["name"]: field for field in json.loads(recorded_json)["fields"]}
    out = []
    for field in schema:
        kept = fields.get(field.name)
        unchanged = field.name in recorded.names and recorded.field(field.name).type.equals(field.type)
        if kept is not None and (unchanged or field.name not in recorded.names):
            out.append(kept)
        else:
            out.append({"name": field.name, "type": spark_type(field.type), "nullable": True, "metadata": {}})
    # Columns Spark has that lakeseek reads no column of; not one lakeseek read and the lake
    # no longer has (a table dropped it).
    out += [f for f in fields.values() if f["name"] not in schema.names and f["name"] not in recorded.names]
    return json.dumps({"type": "struct", "fields": out})
