"""The import graph: no cycle between lakeseek's packages (tools/import_cycles.py, also run by
``make test``), and the checker finds the cycles it is there for."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "tools" / "import_cycles.py")
import_cycles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_cycles)


def test_lakeseek_has_no_import_cycle_between_packages():
    assert import_cycles.cycles(import_cycles.graph(ROOT / "src" / "lakeseek")) == []


def _package(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / "lakeseek" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "lakeseek"


def test_a_lazy_import_back_is_a_cycle(tmp_path):
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "index.py": "def f():\n    from lakeseek.spark.frames import g\n",
            "spark/__init__.py": "",
            "spark/frames.py": "from lakeseek.index import f\n",
        },
    )
    assert import_cycles.cycles(import_cycles.graph(package)) == [["lakeseek.index", "lakeseek.spark"]]
    assert import_cycles.main([str(package)]) == 1


def test_imports_for_type_checking_and_within_a_package_are_no_cycle(tmp_path):
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "index.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lakeseek.spark import frames\n",
            "spark/__init__.py": "from lakeseek.spark import frames\n",
            "spark/frames.py": "from . import helpers\nfrom lakeseek.index import f\n",
            "spark/helpers.py": "from lakeseek.spark import frames\n",
        },
    )
    assert import_cycles.cycles(import_cycles.graph(package)) == []
    assert import_cycles.main([str(package)]) == 0


# Names the standard library has only from Python 3.11 on; lakeseek declares Python >= 3.10,
# and no 3.10 interpreter can be installed here, so its sources are checked for them (ruff,
# with target-version py310, checks the syntax).
NEWER_THAN_3_10 = {
    ("datetime", "UTC"),
    ("typing", "Self"),
    ("typing", "LiteralString"),
    ("typing", "Never"),
    ("typing", "assert_never"),
    ("typing", "reveal_type"),
    ("typing", "Required"),
    ("typing", "NotRequired"),
    ("enum", "StrEnum"),
    ("asyncio", "TaskGroup"),
    ("hashlib", "file_digest"),
}
NEWER_MODULES = {"tomllib", "wsgiref.types"}
NEWER_BUILTINS = {"ExceptionGroup", "BaseExceptionGroup"}


def _newer_than_3_10(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    aliases = {}  # local name -> module, for `import datetime as dt`
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
                if alias.name in NEWER_MODULES:
                    found.append(f"{path}:{node.lineno} imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in NEWER_MODULES:
                found.append(f"{path}:{node.lineno} imports {node.module}")
            found += [
                f"{path}:{node.lineno} {node.module}.{a.name}"
                for a in node.names
                if (node.module, a.name) in NEWER_THAN_3_10
            ]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (aliases.get(node.value.id), node.attr) in NEWER_THAN_3_10:
                found.append(f"{path}:{node.lineno} {aliases[node.value.id]}.{node.attr}")
        elif isinstance(node, ast.Name) and node.id in NEWER_BUILTINS:
            found.append(f"{path}:{node.lineno} {node.id}")
    return found


def test_sources_use_nothing_newer_than_python_3_10():
    found = [hit for path in sorted((ROOT / "src").rglob("*.py")) for hit in _newer_than_3_10(path)]
    assert found == []


def test_the_3_10_check_finds_what_it_is_for(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import datetime as dt\nimport tomllib\nfrom typing import Self\nx = dt.UTC\nExceptionGroup\n")
    assert len(_newer_than_3_10(sample)) == 4


def test_public_functions_take_options_by_keyword_only():
    import inspect

    import lakeseek

    leading = {"create_index": 2, "refresh_index": 2, "optimize_index": 2}  # source, columns or mode
    for name in ("open_index", "create_index", "refresh_index", "optimize_index", "delete_index", "restore_index"):
        parameters = list(inspect.signature(getattr(lakeseek, name)).parameters.values())
        # A kind's own options (``**options`` of create_index) are keywords too.
        keywords = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
        positional = [p.name for p in parameters if p.kind not in keywords]
        assert len(positional) == leading.get(name, 1), (name, positional)
    for name in ("vacuum_index", "cancel_operations", "list_indexes"):
        parameters = inspect.signature(getattr(lakeseek, name)).parameters
        assert [p for p in parameters if parameters[p].kind is not inspect.Parameter.KEYWORD_ONLY] == ["source"]
    returned = {
        "Index",
        "IndexStatus",
        "ColumnStatus",
        "Plan",
        "Explanation",
        "VacuumResult",
        "LogEntry",
        "__version__",
    }
    assert returned <= set(lakeseek.__all__) and all(hasattr(lakeseek, name) for name in lakeseek.__all__)
