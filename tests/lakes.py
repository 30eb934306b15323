"""Test lakes and the full-scan oracle.

The oracle reads every data file with plain pyarrow (partition values taken from the
path by this module, not by lakeseek) and evaluates predicates given as small Python
trees (``("=", column, value)``, ``("and", a, b)``...) with SQL's three-valued logic.
The same trees render to SQL text for lakeseek, so the parser, binder and pyarrow filter
of lakeseek are checked against code that shares nothing with them.
"""

from __future__ import annotations

import datetime as dt
import glob
import os
import random
import re
import shutil
from decimal import Decimal
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from lakeseek.sources.directory import is_hidden

UTC = dt.timezone.utc
NAMES = [
    "alice",
    "Bob",
    "it's",
    'say "hi"',
    "São Paulo",
    "naïve café",
    "🙂 emoji",
    "",
    "back\\slash",
    "50% off",
    "under_score",
    "x" * 300,
    "line\nbreak",
]
REGIONS = ["east", "west", "São Paulo", None]
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("small", pa.int8()),
        ("medium", pa.int16()),
        ("code", pa.int32()),
        ("name", pa.string()),
        ("payload", pa.binary()),
        ("flag", pa.bool_()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("amount", pa.decimal128(12, 2)),
        ("score", pa.float64()),
    ]
)
INDEXABLE = ["id", "small", "medium", "code", "name", "payload", "flag", "day", "ts", "amount", "region"]


def region_dir(region: str | None) -> str:
    return "region=__HIVE_DEFAULT_PARTITION__" if region is None else f"region={region}"


def typed_rows(rng: random.Random, start_id: int, count: int) -> list[dict]:
    rows = []
    for i in range(count):
        rows.append(
            {
                "id": start_id + i,
                "small": rng.choice([None, -128, -1, 0, 1, 7, 127]),
                "medium": rng.choice([None, -300, 0, 300, 32767]),
                "code": rng.randrange(0, 50) if rng.random() > 0.1 else None,
                "name": rng.choice([*NAMES, None]),
                "payload": rng.choice([None, b"", b"\x00\x01", b"\xff" * 3, b"abc", bytes(range(10))]),
                "flag": rng.choice([True, False, None]),
                "day": rng.choice([None, dt.date(2024, 1, 1), dt.date(2024, 2, 29), dt.date(1999, 12, 31)]),
                "ts": rng.choice(
                    [
                        None,
                        dt.datetime(2024, 1, 1, 0, 0, tzinfo=UTC),
                        dt.datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC),
                        dt.datetime(2030, 6, 1, 8, 0, tzinfo=UTC),
                    ]
                ),
                "amount": rng.choice(
                    [None, Decimal("0.00"), Decimal("-12.50"), Decimal("1234567.89"), Decimal("3.10")]
                ),
                "score": rng.choice([None, 0.5, -1.25, 3.0]),
            }
        )
    return rows


def write_file(
    path: str, rows: list[dict], fs: pafs.FileSystem | None = None, row_group_size: int | None = None
) -> None:
    """Write a data file as lake writers do: to a hidden name, then renamed into place (in an
    object store ``fs``, where a path is a URI, with one PUT)."""
    if fs is not None:
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path.partition("://")[2], filesystem=fs)
        return
    directory, name = os.path.split(path)
    os.makedirs(directory, exist_ok=True)
    hidden = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), hidden, row_group_size=row_group_size)
    os.replace(hidden, path)


def make_typed_lake(
    root: str, files_per_region: int = 3, rows_per_file: int = 150, seed: int = 1, row_group_size: int | None = None
) -> None:
    rng = random.Random(seed)
    next_id = 0
    for region in REGIONS:
        for f in range(files_per_region):
            rows = typed_rows(rng, next_id, rows_per_file)
            write_file(f"{root}/{region_dir(region)}/part-{f:03d}.parquet", rows, row_group_size=row_group_size)
            next_id += rows_per_file


# -- the oracle ------------------------------------------------------------------------------
def data_files(root: str, fs: pafs.FileSystem | None = None) -> list[str]:
    """The lake's data files, as lakeseek names them (local paths, or URIs in ``fs``)."""
    if fs is None:
        found = []
        for directory, subdirs, names in os.walk(root):
            subdirs[:] = [d for d in subdirs if not is_hidden(d, directory=True)]
            found.extend(os.path.join(directory, n) for n in names if not is_hidden(n))
        return sorted(found)
    scheme, _, base = root.partition("://")
    found = []
    for info in fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True)):
        parts = info.path[len(base) + 1 :].split("/")
        hidden = any(is_hidden(d, directory=True) for d in parts[:-1]) or is_hidden(parts[-1])
        if info.type == pafs.FileType.File and not hidden:
            found.append(f"{scheme}://{info.path}")
    return sorted(found)


def all_rows(root: str, fs: pafs.FileSystem | None = None) -> list[dict]:
    """Every row of the lake, with partition columns parsed from the path (``fs``: the
    lake's object store, for a URI ``root``)."""
    rows = []
    for path in data_files(root, fs):
        if fs is None and not os.path.getsize(path):
            continue  # no footer, no rows: Spark (and lakeseek) skip 0-byte files
        partitions = {}
        for part in path[len(root) + 1 :].split("/")[:-1]:
            key, _, raw = part.partition("=")
            partitions[key] = None if raw == "__HIVE_DEFAULT_PARTITION__" else unquote(raw)
        table = pq.read_table(path) if fs is None else pq.read_table(path.partition("://")[2], filesystem=fs)
        for row in table.to_pylist():
            row.update(partitions)
            row["__file"] = path
            rows.append(row)
    return rows


def object_store_filesystem(storage_options: dict[str, str]) -> pafs.FileSystem:
    """The test's own pyarrow filesystem for an S3 server lakeseek reaches with these options."""
    endpoint = storage_options["AWS_ENDPOINT_URL"]
    return pafs.S3FileSystem(
        access_key=storage_options["AWS_ACCESS_KEY_ID"],
        secret_key=storage_options["AWS_SECRET_ACCESS_KEY"],
        region=storage_options["AWS_REGION"],
        endpoint_override=endpoint.partition("://")[2],
        scheme=endpoint.partition("://")[0],
    )


def evaluate(tree: tuple, row: dict) -> bool | None:
    kind = tree[0]
    if kind == "and":
        a, b = evaluate(tree[1], row), evaluate(tree[2], row)
        return False if a is False or b is False else (None if a is None or b is None else True)
    if kind == "or":
        a, b = evaluate(tree[1], row), evaluate(tree[2], row)
        return True if a is True or b is True else (None if a is None or b is None else False)
    if kind == "not":
        a = evaluate(tree[1], row)
        return None if a is None else not a
    value = row[tree[1]]
    if kind == "is null":
        return value is None
    if kind == "is not null":
        return value is not None
    if value is None:
        return None
    if kind in ("in", "not in"):
        options = tree[2]
        hit = value in [o for o in options if o is not None]
        result = True if hit else (None if None in options else False)
        return result if kind == "in" or result is None else not result
    if kind == "like":
        regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in tree[2])
        return re.fullmatch(regex, value, re.DOTALL) is not None
    literal = tree[2]
    if literal is None:
        return None
    return {
        "=": value == literal,
        "<>": value != literal,
        "<": value < literal,
        "<=": value <= literal,
        ">": value > literal,
        ">=": value >= literal,
    }[kind]


def matching(rows: list[dict], tree: tuple) -> list[dict]:
    return [row for row in rows if evaluate(tree, row) is True]


def files_with(rows: list[dict], tree: tuple) -> list[str]:
    """The data files holding a row that matches ``tree``."""
    return sorted({row["__file"] for row in matching(rows, tree)})


# -- trees as SQL ------------------------------------------------------------------------------
def sql_literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def to_sql(tree: tuple) -> str:
    kind = tree[0]
    if kind in ("and", "or"):
        return f"({to_sql(tree[1])}) {kind.upper()} ({to_sql(tree[2])})"
    if kind == "not":
        return f"NOT ({to_sql(tree[1])})"
    column = f"`{tree[1]}`"
    if kind in ("is null", "is not null"):
        return f"{column} {kind.upper()}"
    if kind in ("in", "not in"):
        return f"{column} {kind.upper()} ({', '.join(sql_literal(v) for v in tree[2])})"
    if kind == "like":
        return f"{column} LIKE {sql_literal(tree[2])}"
    return f"{column} {kind} {sql_literal(tree[2])}"


def ids(table_or_rows) -> list[int]:
    rows = table_or_rows if isinstance(table_or_rows, list) else table_or_rows.to_pylist()
    return sorted(row["id"] for row in rows)


# -- hypothesis: random predicate trees ----------------------------------------------------------
_COMPARABLE = ["id", "small", "medium", "code", "name", "payload", "flag", "day", "ts", "amount", "region", "score"]


@st.composite
def predicate_trees(draw, rows, depth=0):
    """Random predicate trees over the typed lake's columns, with values the rows hold."""
    if depth < 2 and draw(st.integers(0, 2)) == 0:
        kind = draw(st.sampled_from(["and", "or", "not"]))
        if kind == "not":
            return ("not", draw(predicate_trees(rows, depth + 1)))
        return (kind, draw(predicate_trees(rows, depth + 1)), draw(predicate_trees(rows, depth + 1)))
    column = draw(st.sampled_from(_COMPARABLE))
    present = sorted({row[column] for row in rows if row[column] is not None}, key=repr)
    value = draw(st.sampled_from(present))
    kinds = ["=", "=", "=", "<>", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"]
    kind = draw(st.sampled_from([*kinds, "like"] if column in ("name", "region") else kinds))
    if kind == "like":
        cut = draw(st.integers(0, len(value)))
        return (kind, column, value[:cut].replace("%", "").replace("_", "").replace("\\", "") + "%")
    if kind in ("is null", "is not null"):
        return (kind, column)
    if kind in ("in", "not in"):
        options = draw(st.lists(st.sampled_from([*present, None]), min_size=1, max_size=4))
        return (kind, column, options)
    return (kind, column, value)


# -- copies of indexed lakes -------------------------------------------------------------------------
def copy_lake(source: str, target: str) -> None:
    """Copy an indexed lake, with its indexes trusting the copied files as they trusted the originals.

    A copy gets new inodes and ctimes, so lakeseek rightly sees every copied file as changed
    (docs/freshness.md) and its index would serve nothing; tests that want an indexed copy
    restamp it.
    """
    shutil.copytree(source, target)
    restamp_indexes(target)


def restamp_indexes(lake: str) -> None:
    """Record the current stamp of every data file in every version of every index of ``lake``:
    the indexes then trust the files as they are now, as if they had been built on them.

    For copies, and for tests that damage a file behind the index's back on purpose; only
    right when the files hold what the index was built on.
    """
    import dataclasses

    from lakeseek.commits.log import decode_entry, encode_entry
    from lakeseek.format.lineage import Lineage, read_lineage, write_lineage
    from lakeseek.format.root import LineagePart, Root
    from lakeseek.kinds import decode_content
    from lakeseek.sources import open_lake

    source = open_lake(lake)
    storage, root = source.storage, source.root
    stamps = source.snapshot().files
    rewritten: dict[str, str] = {}  # manifest path -> the path of its restamped copy

    def restamped(index_dir: str, part: LineagePart | None) -> LineagePart | None:
        if part is None:
            return None
        lineage = part.inline if part.inline is not None else read_lineage(storage, f"{index_dir}/{part.path}")
        now = [stamps.get(path) for path in lineage.paths]
        lineage = Lineage(
            lineage.ids,
            lineage.paths,
            [old if new is None else new.size for old, new in zip(lineage.sizes, now, strict=True)],
            [old if new is None else new.mtime_ns for old, new in zip(lineage.mtimes, now, strict=True)],
            [old if new is None else new.version for old, new in zip(lineage.versions, now, strict=True)],
        )
        if part.inline is not None:
            return dataclasses.replace(part, inline=lineage)
        owner = part.path.rpartition("/")[2].split("-", 1)[0]
        path, size = write_lineage(storage, index_dir, owner, lineage)
        rewritten[f"{index_dir}/{part.path}"] = f"{index_dir}/{path}"
        return dataclasses.replace(part, path=path, size=size)

    for entry in sorted(glob.glob(f"{root}/_lakeseek/*/log/*.json")):
        index_dir = entry.rsplit("/log/", 1)[0]
        with open(entry, "rb") as f:
            body = decode_entry(f.read(), entry)
        version = Root.from_json(body, decode_content)
        lineage = version.lineage
        lineage = dataclasses.replace(
            lineage,
            parts=tuple(restamped(index_dir, part) for part in lineage.parts),
            pending=restamped(index_dir, lineage.pending),
        )
        with open(entry, "wb") as f:
            f.write(encode_entry({**body, **dataclasses.replace(version, lineage=lineage).to_json()}))
    for old, new in rewritten.items():
        if old != new:
            os.remove(old)


# CI runs a fixed set of examples; `make fuzz` sets LAKESEEK_FUZZ_EXAMPLES for a longer run with new seeds.
FUZZ_EXAMPLES = os.environ.get("LAKESEEK_FUZZ_EXAMPLES")


def partition_of(lake: str) -> str:
    """A partition directory of a partitioned lake: a file in its root is not the lake's (Spark reads none)."""
    return os.path.dirname(data_files(lake)[0])


def is_text_type(arrow_type: pa.DataType) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type)


def column_predicates(table: pa.Table, rng: random.Random) -> list[str]:
    """Four predicates on random columns of ``table`` (an Arrow table a history's oracle holds, with an ``id`` column),
    with literals from its values: equality, ranges, IN, IS NULL and an OR."""
    found = []
    for _ in range(4):
        column = rng.choice(table.column_names)
        values = [v for v in table.column(column).to_pylist() if v is not None] or [
            "ant" if is_text_type(table.schema.field(column).type) else 0
        ]
        value = rng.choice(values)
        literal = "'" + value.replace("'", "''") + "'" if isinstance(value, str) else str(value)
        others = ", ".join(
            [
                literal,
                *(
                    literal if not isinstance(v, str) else "'" + v.replace("'", "''") + "'"
                    for v in rng.sample(values, min(2, len(values)))
                ),
            ]
        )
        found.append(
            rng.choice(
                [
                    f"{column} = {literal}",
                    f"{column} < {literal}",
                    f"{column} >= {literal}",
                    f"{column} IN ({others})",
                    f"{column} IS NULL",
                    f"{column} <> {literal} OR id = {rng.randrange(max(len(values), 1))}",
                ]
            )
        )
    return found


def check_spark_front_ends(index, spark, location: str, where: str, expected: list[int]) -> None:
    """The ids of the rows ``to_spark`` and the JVM ``lakeseek`` format read for ``where`` are ``expected``."""
    from lakeseek.spark import to_spark

    frames = {
        "to_spark": to_spark(index, spark, where, columns=["id"]),
        "lakeseek format": spark.read.format("lakeseek").load(location).where(where).select("id"),
    }
    for name, frame in frames.items():
        assert sorted(row[0] for row in frame.collect()) == expected, f"{name}: {where}"


def fuzz_settings(examples: int) -> settings:
    """Hypothesis settings of a generated test: ``examples`` fixed ones in CI, more under ``make fuzz``."""
    return settings(
        max_examples=int(FUZZ_EXAMPLES or examples),
        deadline=None,
        derandomize=FUZZ_EXAMPLES is None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def check_generated_predicates(index, rows: list[dict], data, draws: int = 5) -> None:
    """``draws`` generated predicates read a full scan's rows through ``index``, whose files
    include every file holding a match."""
    for _ in range(draws):
        tree = data.draw(predicate_trees(rows))
        where = to_sql(tree)
        assert ids(index.read(where, columns=["id"])) == ids(matching(rows, tree)), where
        assert set(index.files(where)) >= set(files_with(rows, tree)), where


def forget_old_schemas(catalog, name: str) -> None:
    """Expire every snapshot but the current one and remove the schemas none uses, as Java's
    ``ExpireSnapshots.cleanExpiredMetadata(true)`` commits it (pyiceberg has no public call)."""
    import datetime as dt

    from pyiceberg.table.update import RemoveSchemasUpdate

    catalog.load_table(name).maintenance.expire_snapshots().older_than(dt.datetime.now()).commit()
    table = catalog.load_table(name)
    unused = [
        schema.schema_id for schema in table.metadata.schemas if schema.schema_id != table.metadata.current_schema_id
    ]
    with table.transaction() as transaction:
        transaction._apply((RemoveSchemasUpdate(schema_ids=unused),))
    assert len(catalog.load_table(name).metadata.schemas) == 1
