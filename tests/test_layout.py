"""The OTree layout (seed 002) against a full scan: the seed's invariants recomputed from the
files, and filters and samples through the blocks compared with DuckDB over every file."""

from __future__ import annotations

import datetime as dt
import importlib
import os
import shutil
import threading
from collections import Counter

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import lakeseek
import lakeseek.layout as layout
from lakeseek.exceptions import InvalidArgumentError, LakeseekError, UnknownColumnError
from lakeseek.io.hadoop import literal_path
from lakeseek.layout.cubes import Cube
from lakeseek.layout.table import SCRATCH_DIR, LayoutLog
from lakeseek.layout.tree import OFFSET, WEIGHT

layout_write = importlib.import_module("lakeseek.layout.write")  # the module (the package's `write` is the function)
EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def make_rows(seed: int, count: int, *, start: int = 0, spread: int = 1000) -> pa.Table:
    """Rows with duplicate keys, NULLs, NaN and infinities, text and times."""
    rng = np.random.default_rng(seed)
    a = rng.integers(start, start + spread, count)
    b = rng.normal(50, 20, count)
    b[rng.random(count) < 0.02] = np.nan
    b[rng.random(count) < 0.01] = np.inf
    nulls = rng.random(count) < 0.05
    # Some keys end in NUL (NumPy's string scalars drop it: pruning must compare Python values).
    c = [
        None if n else f"k{v:03d}" + ("\x00" if v % 13 == 0 else "")  # the lowest and highest keys too
        for n, v in zip(nulls, rng.integers(0, 40, count), strict=True)
    ]
    ts = [EPOCH + dt.timedelta(minutes=int(m)) for m in rng.integers(0, 10_000, count)]
    return pa.table(
        {
            "a": pa.array(a, pa.int64()),
            "b": pa.array(b, pa.float64(), mask=rng.random(count) < 0.03),
            "c": pa.array(c, pa.string()),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "payload": pa.array([f"row-{i}" for i in range(count)]),
        }
    )


def live_files(location: str) -> list[str]:
    state = LayoutLog(lakeseek.open_lake(location).storage, location).latest()
    return [f"{location}/{path}" for path in sorted(state.files)]


def scan(location: str):
    connection = duckdb.connect()
    # A table, not a view: DuckDB's scan of Parquet skips row groups by statistics that leave
    # NaN out (pyarrow's), and loses NaN rows that Spark (and lakeseek) order above every number.
    connection.execute(f"CREATE TABLE lake AS SELECT * FROM read_parquet({live_files(location)!r}, filename = true)")
    return connection


def check_invariants(location: str) -> None:
    """Every row inside its cube's box, assigned to the first cube of its chain whose maximum
    weight holds it; blocks' counts and minimum weights exact; weights never decrease down the
    tree of one write."""
    state = LayoutLog(lakeseek.open_lake(location).storage, location).latest()
    for path, file in state.files.items():
        table = pq.read_table(f"{location}/{path}")
        assert table.num_rows == file.rows == sum(b.rows for b in file.blocks)
        revision = state.revision(file.revision)
        points = np.column_stack([t.positions(table.column(t.column)) for t in revision.transformations])
        weights = table.column(WEIGHT).to_numpy()
        blocks = sorted(file.blocks, key=lambda b: len(b.cube))
        owner = np.full(table.num_rows, -1)
        for number, block in enumerate(blocks):
            cube = Cube.from_string(len(revision.transformations), block.cube)
            inside = cube.contains(points) & (owner < 0) & (weights <= block.max_weight)
            owner[inside] = number
        assert (owner >= 0).all(), f"a row of {path} lies in none of its blocks"
        counts = Counter(owner.tolist())
        for number, block in enumerate(blocks):
            assert counts[number] == block.rows, (path, block)
            assert weights[owner == number].min() == block.min_weight
        by_cube = {b.cube: b for b in file.blocks}
        width = -(-len(revision.transformations) // 6)
        for block in file.blocks:
            parent = by_cube.get(block.cube[:-width]) if block.cube else None
            if parent is not None:
                assert block.min_weight > parent.max_weight >= -OFFSET
                assert block.max_weight >= parent.max_weight


PREDICATES = [
    "a < {a}",
    "a >= {a} AND a < {a2}",
    "a = {a}",
    "a IN ({a}, {a2})",
    "b > {b}",
    "b <= {b} OR c = 'k{k:03d}'",
    "c = 'k{k:03d}'",
    "c = 'k000\x00'",
    "c <= 'k000\x00' AND a < {a2}",
    "c IS NULL",
    "b IS NULL AND a > {a}",
    "ts < TIMESTAMP '2024-01-0{d} 00:00:00'",
    "NOT (a < {a})",
    "a < {a} AND b > {b} AND ts >= TIMESTAMP '2024-01-0{d} 00:00:00'",
    "b = CAST('NaN' AS DOUBLE)",
    "payload = 'row-{a}'",
]


def predicate(draw_index: int, rng: np.random.Generator) -> str:
    a = int(rng.integers(-50, 1100))
    values = {"a": a, "a2": a + int(rng.integers(0, 300)), "b": round(float(rng.normal(50, 25)), 2)}
    values.update(k=int(rng.integers(0, 45)), d=int(rng.integers(1, 9)))
    return PREDICATES[draw_index % len(PREDICATES)].format(**values)


def check_reads(location: str, rng: np.random.Generator, queries: int = 12) -> None:
    """Filters and samples through the blocks equal DuckDB over every file with the same
    weight filter; the files chosen hold every match."""
    connection = scan(location)
    for number in range(queries):
        where = predicate(int(rng.integers(0, 1000)), rng)
        fraction = [None, 0.01, 0.1, 0.5, 1.0][number % 5]
        sampled = where if fraction is None else f"({where}) AND {layout.sample_sql(fraction)}"
        expected = connection.execute(f"SELECT payload FROM lake WHERE {sampled} ORDER BY payload").fetchall()
        got = layout.read(location, where, sample=fraction, columns=["payload"]).sort_by("payload")
        assert got.column("payload").to_pylist() == [row[0] for row in expected], (where, fraction)
        holding = {
            row[0] for row in connection.execute(f"SELECT DISTINCT filename FROM lake WHERE {sampled}").fetchall()
        }
        assert holding <= set(layout.files(location, where, sample=fraction)), (where, fraction)


@settings(
    max_examples=20,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(0, 10_000),
    columns=st.sampled_from(
        [
            ["a"],
            ["a:linear", "c:hash"],
            ["b:quantiles", "ts"],
            ["a:quantiles", "b:linear", "c:quantiles"],
            ["c", "a", "ts", "b"],
        ]
    ),
    cube_size=st.integers(20, 400),
    appends=st.lists(st.tuples(st.integers(1, 1500), st.integers(-500, 2000)), min_size=1, max_size=3),
    headroom=st.sampled_from([0.0, 1.0]),
    optimized=st.booleans(),
)
# NaN rows under a range (a DuckDB view over the files lost them; see scan).
@example(seed=6598, columns=["c", "a", "ts", "b"], cube_size=130, appends=[(425, 130)], headroom=0.0, optimized=False)
def test_layouts_keep_the_seeds_invariants_and_answer_like_a_full_scan(
    tmp_path_factory, seed, columns, cube_size, appends, headroom, optimized
):
    location = str(tmp_path_factory.mktemp("otree") / "lake")
    written = []
    for number, (count, start) in enumerate(appends):
        rows = make_rows(seed + number, count, start=start)
        layout.write(rows, location, columns, cube_size=cube_size, headroom=headroom, max_file_rows=3 * cube_size)
        written.append(rows)
    if optimized:
        before = scan(location).execute("SELECT * EXCLUDE (filename) FROM lake ORDER BY ALL").fetchall()
        layout.optimize(location)
        after = scan(location).execute("SELECT * EXCLUDE (filename) FROM lake ORDER BY ALL").fetchall()
        assert repr(after) == repr(before)  # (repr: NaN equals NaN)
    stored = scan(location).execute("SELECT a, payload FROM lake ORDER BY a, payload").fetchall()
    given_rows = pa.concat_tables(written).select(["a", "payload"]).to_pylist()
    assert stored == sorted((row["a"], row["payload"]) for row in given_rows)
    check_invariants(location)
    check_reads(location, np.random.default_rng(seed))


def test_samples_are_nested_deterministic_and_near_their_fraction(tmp_path):
    location = str(tmp_path / "lake")
    layout.write(make_rows(1, 20_000), location, ["a", "b"], cube_size=500)
    sizes = {}
    previous: set[str] = set()
    for fraction in (0.01, 0.05, 0.1):
        rows = set(layout.sample(location, fraction, columns=["payload"]).column("payload").to_pylist())
        assert previous <= rows
        assert rows == set(layout.sample(location, fraction, columns=["payload"]).column("payload").to_pylist())
        sizes[fraction] = len(rows)
        previous = rows
    assert 100 < sizes[0.01] < 300 and 800 < sizes[0.05] < 1200
    # A 1 % sample opens only the files of the top of the tree.
    assert len(layout.files(location, sample=0.01)) < len(live_files(location)) / 3


def test_duplicate_keys_get_distinct_weights(tmp_path):
    location = str(tmp_path / "lake")
    rows = pa.table({"a": pa.array([7] * 5000, pa.int64()), "payload": pa.array(["same"] * 5000)})
    layout.write(rows, location, ["a"], cube_size=100)
    weights = scan(location).execute(f"SELECT count(DISTINCT {WEIGHT}) FROM lake").fetchone()[0]
    assert weights > 4990
    # All at one point: a deep chain of cubes, each holding its share; a 1 % sample is ~50 rows.
    assert 20 < layout.sample(location, 0.01).num_rows < 100


def test_monotonic_appends_open_a_revision_per_doubling_with_headroom(tmp_path):
    def revisions(headroom: float) -> int:
        location = str(tmp_path / f"lake-{headroom}")
        for day in range(12):
            layout.write(make_rows(day, 200, start=day * 100, spread=100), location, ["a"], headroom=headroom)
        return len(LayoutLog(lakeseek.open_lake(location).storage, location).latest().revisions)

    assert revisions(0.0) == 12
    assert revisions(1.0) <= 4


def test_an_append_naming_bare_columns_keeps_the_layouts_transformations_and_cube_size(tmp_path):
    """As the README appends: `["x", "y"]` after `["x:linear", "y:quantiles"]` and a cube size
    of the first write's own. Bare names took their types' defaults (y linear) and the cube
    size its default: every such append opened a revision."""
    location = str(tmp_path / "lake")
    layout.write(make_rows(0, 400), location, ["a:linear", "c:hash", "b:quantiles"], cube_size=50)
    layout.write(make_rows(1, 100), location, ["a", "c", "b"])
    layout.write(make_rows(2, 100), location, ["a", "c", "b:quantiles"], mode="append")
    (revision,) = LayoutLog(lakeseek.open_lake(location).storage, location).latest().revisions
    assert [(t.column, t.kind) for t in revision.transformations] == [
        ("a", "linear"),
        ("c", "hash"),
        ("b", "quantiles"),
    ]
    assert revision.cube_size == 50
    # Overwritten, bare names are the types' defaults again.
    layout.write(make_rows(3, 100), location, ["a", "b"], mode="overwrite")
    (revision,) = LayoutLog(lakeseek.open_lake(location).storage, location).latest().revisions
    assert [t.kind for t in revision.transformations] == ["linear", "linear"]


def test_racing_appends_all_land(tmp_path):
    location = str(tmp_path / "lake")
    layout.write(make_rows(0, 100), location, ["a"], cube_size=50)
    errors = []

    def append(seed: int) -> None:
        try:
            layout.write(make_rows(seed, 300), location, ["a"], cube_size=50)
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=append, args=(seed,)) for seed in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert scan(location).execute("SELECT count(*) FROM lake").fetchone()[0] == 100 + 6 * 300
    versions = LayoutLog(lakeseek.open_lake(location).storage, location).versions()
    assert versions == list(range(7))


def test_a_lake_written_again_at_the_same_place_reads_as_the_new_one(tmp_path):
    """Parsed log entries are kept in the process by their listing and checksum: a lake
    deleted and written again (same entry name and size, and here the same file time, as a
    coarse clock or an object store's seconds give) must not read as the old one."""
    location = str(tmp_path / "lake")
    entry = tmp_path / "lake" / "_lakeseek_layout" / "log" / f"{0:020d}.json"
    previous = None
    for round_ in range(1, 6):
        shutil.rmtree(location, ignore_errors=True)
        rows = pa.table({"a": pa.array([round_ * 10 + i for i in range(10)], pa.int64())})
        layout.write(rows, location, ["a"], cube_size=100)
        if previous is not None and entry.stat().st_size == previous.st_size:
            os.utime(entry, ns=(previous.st_atime_ns, previous.st_mtime_ns))
        previous = entry.stat()
        assert sorted(layout.read(location, "a >= 0").column("a").to_pylist()) == rows.column("a").to_pylist()


def test_an_index_on_an_otree_lake_reads_through_its_blocks(tmp_path):
    location = str(tmp_path / "lake")
    layout.write(make_rows(3, 8000), location, ["a", "ts"], cube_size=300)
    layout.write(make_rows(4, 2000), location, ["a", "ts"], cube_size=300)
    lakeseek.create_index(location, ["c"], engine="local")
    index = lakeseek.open_index(location)
    assert index.lake.name == "otree"
    connection = scan(location)
    rng = np.random.default_rng(5)
    for number in range(20):
        where = predicate(number, rng)
        for fraction in (None, 0.05):
            sampled = where if fraction is None else f"({where}) AND {layout.sample_sql(fraction)}"
            expected = connection.execute(f"SELECT payload FROM lake WHERE {sampled} ORDER BY payload").fetchall()
            got = index.read(where, ["payload"], sample=fraction).sort_by("payload").column("payload").to_pylist()
            assert got == [row[0] for row in expected], (where, fraction)
    everything = len(index.files("a < 5000"))
    assert len(index.files("a < 100 AND ts < TIMESTAMP '2024-01-02 00:00:00'")) < everything
    layout.optimize(location)
    assert (
        index.read("c = 'k001'").num_rows
        == connection.execute("SELECT count(*) FROM lake WHERE c = 'k001'").fetchone()[0]
    )


def test_bad_requests_are_one_line_errors(tmp_path):
    location = str(tmp_path / "lake")
    rows = make_rows(0, 100)
    with pytest.raises(UnknownColumnError, match="unknown layout column 'nope'"):
        layout.write(rows, location, ["nope"])
    with pytest.raises(InvalidArgumentError, match="linear transformation needs numbers"):
        layout.write(rows, location, ["c:linear"])
    with pytest.raises(InvalidArgumentError, match="unknown transformation"):
        layout.write(rows, location, ["a:zorder"])
    layout.write(rows, location, ["a"])
    with pytest.raises(InvalidArgumentError, match=r"a sample is a fraction in \(0, 1\]"):
        layout.sample(location, 1.5)
    with pytest.raises(LakeseekError, match="schema differs"):
        layout.write(rows.drop_columns(["payload"]), location, ["a"])
    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(rows, plain / "part.parquet")
    lakeseek.create_index(str(plain), ["a"], engine="local")
    with pytest.raises(InvalidArgumentError, match="no _lakeseek_weight column"):
        lakeseek.open_index(str(plain)).read("a = 1", sample=0.1)
    # Into a location holding another lake's files, which every read would leave out after.
    with pytest.raises(InvalidArgumentError, match="holds files that are not an OTree lake's"):
        layout.write(rows, str(plain), ["a"])
    with pytest.raises(UnknownColumnError, match="unknown column 'nope'"):
        layout.read(location, "a > 1", columns=["nope"])
    assert layout.read(location, "a > 1", columns=["A"]).column_names == ["a"]
    for fraction in (float("nan"), 1.5, -1, True):
        with pytest.raises(InvalidArgumentError, match="a sample is a fraction"):
            layout.sample_sql(fraction)
    with pytest.raises(InvalidArgumentError, match="a name lakeseek's layout writer uses"):
        layout.write(rows.append_column("__lakeseek_file", pa.array([1] * 100)), str(tmp_path / "other"), ["a"])
    for headroom in (float("nan"), float("inf"), -0.5):
        with pytest.raises(InvalidArgumentError, match="headroom a finite number"):
            layout.write(rows, location, ["a"], headroom=headroom)
    many = pa.table({f"c{n}": pa.array([n]) for n in range(40)})
    with pytest.raises(InvalidArgumentError, match="at most 32 columns"):
        layout.write(many, str(tmp_path / "wide"), many.column_names)


def _entries(location: str) -> list[str]:
    log = f"{location}/_lakeseek_layout/log"
    return sorted(f"{log}/{name}" for name in os.listdir(log))


@pytest.mark.parametrize("damage", ["directory", "truncated", "outside", "data file truncated", "data file gone"])
def test_a_damaged_layout_is_a_one_line_error_not_fewer_rows(tmp_path, damage):
    """Found by a hunt: the newest entry replaced by a directory read the version before it
    (the rows the newest added left out, silently); a damaged data file was a pyarrow error
    (a traceback in the command line); an entry naming `../file` was read, and optimize failed
    on it with an IndexError. Each is now an error naming the damage, for every command."""
    from click.testing import CliRunner

    from lakeseek.cli.main import main

    location = str(tmp_path / "lake")
    layout.write(make_rows(0, 600), location, ["a:linear", "b:linear"], cube_size=100, mode="overwrite")
    layout.write(make_rows(1, 60), location, ["a:linear", "b:linear"], cube_size=100, mode="append")
    newest = _entries(location)[-1]
    data_file = sorted(live_files(location))[0]
    if damage == "directory":
        os.remove(newest)
        os.mkdir(newest)
    elif damage == "truncated":
        os.truncate(newest, 20)
    elif damage == "outside":
        from lakeseek.commits.log import decode_entry, encode_entry

        with open(newest, "rb") as entry:
            body = decode_entry(entry.read(), newest)
        shutil.copy(f"{location}/{body['files'][0]['path']}", tmp_path / "outside.parquet")
        body["files"][0]["path"] = "../outside.parquet"
        with open(newest, "wb") as entry:
            entry.write(encode_entry(body))
    elif damage == "data file truncated":
        os.truncate(data_file, os.path.getsize(data_file) // 2)
    else:
        os.remove(data_file)
    with pytest.raises(LakeseekError) as raised:
        layout.read(location)
    assert "\n" not in str(raised.value) and "refresh" not in str(raised.value), raised.value
    if damage == "data file gone":  # it said "run it again", which reads the same log again
        assert "is missing" in str(raised.value) and "again" not in str(raised.value), raised.value
    for command in (
        ["layout", "sample", location, "--fraction", "0.5"],
        ["layout", "optimize", location, "--engine", "local"],
    ):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), (command, result.output)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert os.path.exists(tmp_path / "outside.parquet") == (damage == "outside")


def test_the_command_line_writes_a_partitioned_directory_with_its_partition_columns(spark, tmp_path):
    """``layout write --engine local`` read the directory with pyarrow's defaults and dropped
    the partition column Spark reads from ``date=...`` (found by the docs hunt)."""
    from click.testing import CliRunner

    from lakeseek.cli.main import main

    source = tmp_path / "source"
    for day in ("2024-01-01", "2024-01-02"):
        (source / f"date={day}").mkdir(parents=True)
        pq.write_table(pa.table({"x": [1, 2, 3]}), source / f"date={day}" / "part-0.parquet")
    (source / "_SUCCESS").write_bytes(b"")
    expected = sorted((row.x, row.date) for row in spark.read.parquet(str(source)).collect())
    for engine in ("local", "spark"):
        target = tmp_path / f"otree-{engine}"
        arguments = ["layout", "write", str(source), str(target), "--columns", "x", "--engine", engine]
        result = CliRunner().invoke(main, arguments, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        rows = layout.read(str(target), "x > 0")
        assert sorted(zip(rows.column("x").to_pylist(), rows.column("date").to_pylist(), strict=True)) == expected


def test_columns_arrow_cannot_count_are_written_and_read(tmp_path):
    """All-NULL, dictionary, struct, list and map columns beside the layout's."""
    location = str(tmp_path / "lake")
    rows = pa.table(
        {
            "x": pa.array([1.0, 2.0, 3.0]),
            "n": pa.nulls(3),
            "d": pa.array(["a", "b", "a"]).dictionary_encode(),
            "st": pa.array([{"a": 1}, {"a": 2}, None]),
            "l": pa.array([[1], [], None]),
            "m": pa.array([[("k", 1)], [], None], pa.map_(pa.string(), pa.int64())),
        }
    )
    layout.write(rows, location, ["x"], cube_size=1)
    got = layout.read(location, "x > 1").sort_by("x")
    assert got.column("x").to_pylist() == [2.0, 3.0]
    assert got.column("st").to_pylist() == [{"a": 2}, None] and got.column("l").to_pylist() == [[], None]


def test_spark_writes_the_same_layout_and_reads_samples_through_the_blocks(spark, tmp_path, monkeypatch):
    location = str(tmp_path / "a br[a]ce lake")  # Spark reads paths as glob patterns but for escapes
    rows = make_rows(9, 6000)
    frame = spark.createDataFrame(rows.to_pandas()).repartition(3)
    # Several write tasks, each fed by several spills of every routing task.
    monkeypatch.setattr(layout_write, "ROWS_PER_WRITE_TASK", 1500)
    monkeypatch.setattr(layout_write, "SPILL_BYTES", 20_000)
    layout.write(frame, location, ["a", "b:quantiles", "ts"], cube_size=250)
    assert not [path for path in (tmp_path / "a br[a]ce lake" / SCRATCH_DIR).rglob("*") if path.is_file()]
    layout.write(
        spark.createDataFrame(make_rows(10, 1000, start=900).to_pandas()),
        location,
        ["a", "b:quantiles", "ts"],
        cube_size=250,
    )
    check_invariants(location)
    check_reads(location, np.random.default_rng(2))
    layout.optimize(location, spark=spark)
    check_invariants(location)
    full = spark.read.parquet(*[literal_path(path) for path in live_files(location)])
    for fraction in (0.01, 0.1):
        expected = sorted(r.payload for r in full.where(layout.sample_sql(fraction)).select("payload").collect())
        got = sorted(layout.sample(location, fraction, columns=["payload"]).column("payload").to_pylist())
        assert got == expected
    converted = str(tmp_path / "con{verted}")
    layout.convert(location, converted, ["a", "c"], spark=spark, cube_size=500)
    assert scan(converted).execute("SELECT count(*) FROM lake").fetchone()[0] == 7000


def test_spark_writes_timestamps_of_the_first_and_last_years(spark, tmp_path):
    """Python datetimes cannot hold them in local time: the write's ranges must not pass through them."""
    rows = pa.table(
        {
            "a": pa.array([1, 2, 3], pa.int32()),
            "ts": pa.array([-62135596800_000000, 0, 253402300799_999999], pa.timestamp("us", tz="UTC")),
        }
    )
    location = str(tmp_path / "lake")
    layout.write(spark.createDataFrame(rows.to_pandas()), location, ["ts"], mode="overwrite")
    got = layout.read(location, "ts < TIMESTAMP '1970-01-01 00:00:01'", columns=["a"]).column("a").to_pylist()
    assert sorted(got) == [1, 2]


def _files_read(frame) -> int:
    """The files Spark's scan of a frame not collected before lists (its numFiles metric)."""
    frame.collect()
    return int(frame._jdf.queryExecution().executedPlan().collectLeaves().head().metrics().apply("numFiles").value())


def test_the_spark_format_prunes_by_blocks_and_pushes_samples_down(jvm_spark, tmp_path):
    """``format("lakeseek")`` on an OTree lake without an index: filters read the files the
    blocks allow, and ``TABLESAMPLE``, ``df.sample`` and ``randomSplit`` become weight filters
    (exactly the rows of weight below the fraction's threshold, from those files only)."""
    spark = jvm_spark
    location = str(tmp_path / "lake")
    layout.write(make_rows(11, 4000), location, ["a", "b:quantiles"], cube_size=100)
    layout.write(make_rows(12, 1000, start=500), location, ["a", "b:quantiles"], cube_size=100)
    full = spark.read.parquet(*live_files(location))
    lake = spark.read.format("lakeseek").load(location)
    total = len(live_files(location))

    def payloads(frame) -> list[str]:
        return sorted(row.payload for row in frame.select("payload").collect())

    for where in ("a < 40", "a >= 700 AND b > 60", "b IS NULL OR a = 3", "c = 'k007'"):
        assert payloads(lake.where(where)) == payloads(full.where(where)), where
        assert _files_read(lake.where(where).select("payload")) == len(layout.files(location, where)), where
    lake.createOrReplaceTempView("otree_lake")
    for fraction in (0.01, 0.1, 0.5):
        expected = payloads(full.where(layout.sample_sql(fraction)))
        assert payloads(lake.sample(fraction, seed=3)) == expected
        assert payloads(spark.sql(f"SELECT * FROM otree_lake TABLESAMPLE ({fraction * 100:g} PERCENT)")) == expected
        narrowed = lake.select("payload", "a").sample(fraction).where("a > 100")
        assert payloads(narrowed) == payloads(full.where(f"a > 100 AND {layout.sample_sql(fraction)}"))
        chosen = len(layout.files(location, sample=fraction))
        assert _files_read(lake.sample(fraction).select("payload")) == chosen <= total
    assert len(layout.files(location, sample=0.01)) < total
    parts = lake.randomSplit([0.3, 0.7], seed=5)
    assert sorted(payloads(parts[0]) + payloads(parts[1])) == payloads(full)
    assert payloads(parts[0]) == payloads(full.where(layout.sample_sql(0.3)))
    assert lake.sample(True, 0.5, seed=1).count() > 0  # with replacement: Spark's own sample


def test_linear_columns_beyond_two_to_the_53(tmp_path):
    """Integers and timestamps beyond 2^53 (microseconds after 2255) take positions rounded to
    float64, in order: writes work and reads answer like a full scan."""
    location = str(tmp_path / "lake")
    big = 2**63 - 1
    values = [-(2**63), -(2**53) - 3, 0, 2**53 + 1, 2**53 + 2, big - 1, big]
    times = [EPOCH + dt.timedelta(days=36500 * k) for k in range(len(values))]  # to year 2624
    rows = pa.table(
        {
            "i": pa.array(values, pa.int64()),
            "t": pa.array(times, pa.timestamp("us", tz="UTC")),
            "payload": pa.array([f"row-{n}" for n in range(len(values))]),
        }
    )
    layout.write(rows, location, ["i", "t"], cube_size=2)
    connection = scan(location)
    for where in [
        f"i = {big}",
        f"i = {big - 1}",
        f"i > {2**53}",
        f"i < {-(2**53)}",
        f"i >= {2**53 + 2} AND i < {big}",
        "t > TIMESTAMP '2300-01-01 00:00:00'",
        "t < TIMESTAMP '2500-06-01 00:00:00' AND i > 0",
    ]:
        expected = [
            row[0] for row in connection.execute(f"SELECT payload FROM lake WHERE {where} ORDER BY payload").fetchall()
        ]
        assert sorted(layout.read(location, where, columns=["payload"]).column("payload").to_pylist()) == expected, (
            where
        )


def test_an_index_sees_its_otree_lake_written_again_from_nothing(tmp_path):
    """The lake's versions restart when it is deleted and written again: the index recorded
    version 0 of the old lake, and must not take the new version 0 for it."""
    location = str(tmp_path / "lake")
    layout.write(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), location, ["id"], cube_size=100)
    lakeseek.create_index(location, ["id"], engine="local")
    held = lakeseek.open_index(location)
    shutil.rmtree(tmp_path / "lake" / "_lakeseek_layout")
    shutil.rmtree(tmp_path / "lake" / "data")
    layout.write(pa.table({"id": pa.array([4, 5, 6], pa.int64())}), location, ["id"], cube_size=100)
    for index in (held, lakeseek.open_index(location), held.reload()):
        assert sorted(index.read("id >= 0").column("id").to_pylist()) == [4, 5, 6]
        assert index.read("id = 5").num_rows == 1


def test_a_spark_frame_over_an_otree_lake_reads_it_after_optimize_and_overwrite(jvm_spark, tmp_path):
    """Spark lists a relation's files once; the planner answers for the lake now. After an
    optimize or an overwrite replaced every file, the frame lists again rather than read none."""
    location = str(tmp_path / "lake")
    layout.write(make_rows(21, 500), location, ["a"], cube_size=100)
    layout.write(make_rows(22, 500, start=100), location, ["a"], cube_size=100)
    frame = jvm_spark.read.format("lakeseek").load(location)
    assert frame.count() == 1000
    layout.optimize(location)
    assert frame.count() == 1000
    assert (
        frame.where("a < 300").count()
        == scan(location).execute("SELECT count(*) FROM lake WHERE a < 300").fetchone()[0]
    )
    layout.write(make_rows(23, 300), location, ["a"], cube_size=100, mode="overwrite")
    assert frame.count() == 300


def test_text_and_bytes_ending_in_nul_are_pruned_exactly(tmp_path):
    """File bounds of strings and bytes are compared as Python values (NumPy's own string
    scalars drop trailing NUL characters: 'a\\x00' would compare as 'a')."""
    location = str(tmp_path / "lake")
    rows = pa.table(
        {
            "k": pa.array(range(4), pa.int64()),
            "s": pa.array(["a\x00", "b", "a", "c"]),
            "bin": pa.array([b"\x00", b"ab", b"", b"\xff"]),
        }
    )
    layout.write(rows, location, ["k"], cube_size=1)  # a file per row
    connection = scan(location)
    for where in ["s = 'a\x00'", "bin = X'00'", "bin <= X'00'", "s >= 'a\x00'", "s < 'a\x00'", "s IN ('a\x00', 'q')"]:
        expected = sorted(row[0] for row in connection.execute(f"SELECT k FROM lake WHERE {where}").fetchall())
        assert sorted(layout.read(location, where).column("k").to_pylist()) == expected, where


def test_the_spark_format_keeps_nan_and_negative_zero_rows(jvm_spark, tmp_path):
    """Spark's Parquet reader skips row groups by statistics that leave NaN out and by
    dictionaries that tell -0.0 from 0.0: the layout writes neither for floating-point columns."""
    location = str(tmp_path / "lake")
    values = [float("nan") if i % 10 == 0 else (-0.0 if i % 2 else i / 1000) for i in range(1000)]
    rows = pa.table(
        {"id": pa.array(range(1000), pa.int64()), "x": pa.array(values), "r": pa.array(values, pa.float32())}
    )
    layout.write(rows, location, ["id"], cube_size=100)
    frame = jvm_spark.read.format("lakeseek").load(location)
    for where in ["x > 2", "x = CAST('NaN' AS DOUBLE)", "x = 0.0", "r = 0.0", "x = -0.0", "x < 0.5"]:
        assert frame.where(where).count() == layout.read(location, where).num_rows, where
    assert frame.where("x > 2").count() == 100
