"""No import cycles in pytest_fsbench (issue 24): the import graph of every module of the package,
read with ast, has none. Every import counts: at module level, inside functions and classes (an
import moved into a function to dodge a cycle is still the cycle), under `if TYPE_CHECKING`, and
relative ones. Importing a.b.c runs a/__init__ and a/b/__init__ first, so those count too; and a
package that discovers its modules (importlib over pkgutil.iter_modules(__path__), as the
filesystem and workload registries do) imports every one of them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_fsbench

PACKAGE = Path(pytest_fsbench.__file__).parent


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at root."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _discovers_submodules(tree: ast.AST) -> bool:
    """A registry package: it imports whatever pkgutil.iter_modules(__path__) finds."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "iter_modules" and any(isinstance(arg, ast.Name) and arg.id == "__path__"
                                                            for arg in node.args)
               for node in ast.walk(tree))


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that importing `name` runs: what it imports anywhere in its body, and
    the packages those are in (not its own: they are being imported already)."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets.add(source)
            targets.update(f"{source}.{alias.name}" for alias in node.names)  # a submodule, if one
    if path.name == "__init__.py" and _discovers_submodules(tree):
        targets.update(other for other in known if other.rpartition(".")[0] == name)
    found = set()
    for target in targets:
        for module in (*_ancestors(target), target):
            if module in known:
                found.add(module)
    return found - {name, *_ancestors(name)}


def import_graph(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imported(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each group of modules that import each other (strongly connected
    components, Tarjan's algorithm), as a path that ends where it starts."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_path_around(sorted(group)[0], group, graph) for group in groups]


def _path_around(start: str, group: set[str], graph: dict[str, set[str]]) -> list[str]:
    """The shortest path from start back to itself inside group (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for other in sorted(graph[node] & group):
                if other == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
                if other not in came_from:
                    came_from[other] = node
                    following.append(other)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def test_pytest_fsbench_has_no_import_cycles():
    found = cycles(import_graph(PACKAGE))
    assert not found, "import cycles in pytest_fsbench (move the shared code to a module both can import, " \
                      "or pass the function in):\n" + "\n".join(" -> ".join(cycle) for cycle in found)


def make_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "pkg"


def test_the_check_sees_imports_in_functions_classes_and_type_checking_blocks(tmp_path):
    package = make_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "def f():\n    from .sub import b\n",  # inside a function, relative
        "pkg/sub/__init__.py": "",
        "pkg/sub/b.py": "class C:\n    import pkg.c\n",  # inside a class, absolute
        "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
        "pkg/d.py": "from . import a\n",  # imports into the cycle, is not in it
    })
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]


def test_importing_a_module_runs_its_packages(tmp_path):
    package = make_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/d.py": "from .sub.b import C\n",  # runs sub/__init__ first
        "pkg/sub/__init__.py": "from ..d import C\n",
        "pkg/sub/b.py": "from . import c\nC = 1\n",
        "pkg/sub/c.py": "from .. import sub\n",  # its own package: no edge
    })
    assert cycles(import_graph(package)) == [["pkg.d", "pkg.sub", "pkg.d"]]
    assert import_graph(package)["pkg.sub.c"] == set()


def test_a_registry_imports_the_modules_it_discovers(tmp_path):
    package = make_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/host.py": "from .drivers.base import X\n",
        "pkg/drivers/__init__.py": "import importlib, pkgutil\nfor m in pkgutil.iter_modules(__path__):\n"
                                   "    importlib.import_module(f'{__name__}.{m.name}')\n",
        "pkg/drivers/base.py": "X = 1\n",
        "pkg/drivers/one.py": "from ..host import X\n",
    })
    assert cycles(import_graph(package)) == [["pkg.drivers", "pkg.drivers.one", "pkg.host", "pkg.drivers"]]


def test_the_commands_that_print_import_no_matplotlib():
    """matplotlib is imported by what draws (a report, --figure) alone: it was half the start of
    every command (fsbench sessions, compare and changes print text), through fsbench fleet's
    import of the change points' lines."""
    import subprocess
    import sys

    script = ("import sys\nimport pytest_fsbench.cli, pytest_fsbench.views.change_points, pytest_fsbench.fleet\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
