"""Import cycles between lakeseek's packages.

Every import of a lakeseek module counts, including those made inside functions (a lazy
import is still a dependency), except imports under ``if TYPE_CHECKING:``. Modules are
grouped by package: ``lakeseek.spark.build`` belongs to ``lakeseek.spark``; a module at the
top (``lakeseek.index``) is its own package. Prints each cycle and exits 1 if any.

Run:  python tools/import_cycles.py [src/lakeseek]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    found = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "lakeseek" or name.startswith("lakeseek.")}


def package_of(module: str) -> str:
    """``lakeseek.spark.jvm`` -> ``lakeseek.spark``; ``lakeseek.index`` -> itself."""
    return ".".join(module.split(".")[:2])


def graph(root: Path) -> dict[str, set[str]]:
    modules = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent).with_suffix("")
        name = ".".join(relative.parts[:-1] if relative.name == "__init__" else relative.parts)
        modules[name] = path
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        source = package_of(name)
        for target in _imports(path, name):
            while target not in modules and "." in target:  # `from pkg import name` of a non-module
                target = target.rpartition(".")[0]
            if target in modules and package_of(target) != source:
                edges.setdefault(source, set()).add(package_of(target))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else "src/lakeseek")
    edges = graph(root)
    found = cycles(edges)
    for component in found:
        members = set(component)
        print("cycle:", " <-> ".join(component))
        for source in component:
            targets = sorted(edges.get(source, set()) & members)
            print(f"  {source} -> {', '.join(targets)}")
    if not found:
        print(f"no import cycle between the packages of {root}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
