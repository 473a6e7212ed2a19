"""The package's concerns import downwards only (issue 31): every subpackage, and every module at
the top of pytest_fsbench, has a layer, and an import may only reach its own layer or a lower
one; units of one layer may import each other, never in a circle. Read from the same import graph as test_imports.py (every import counts, in functions and
under TYPE_CHECKING too)."""

from __future__ import annotations

from pathlib import Path

from test_imports import PACKAGE, cycles, import_graph, make_package

#: top to bottom; a unit is a subpackage or a top-level module
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli", "fleet", "bisect", "plugin", "terminal", "benchmark_params", "doctor", "docs"),  # entry points, hooks
    ("studies",),  # a study is a set of sessions with its page
    ("bench", "session", "provisioning", "settings", "matrix"),  # one session: its settings, cases, targets
    ("views", "pts"),  # what a person or PTS reads
    ("verdicts",),  # statistics, gate, baselines, drift, change points
    ("kernels",),  # guests build targets and measure runs on the host's behalf
    ("measure",),  # one measured run
    ("targets",),  # one target and its devices
    ("filesystems", "workloads"),  # the drivers and tools, mostly data
    ("store",),  # the one place results are stored
    ("system", "errors", "sizes", "case", "metrics", "options"),  # the ground
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
MOST_TOP_LEVEL_MODULES = 18


def unit_of(module: str) -> str:
    """pytest_fsbench.verdicts.gate -> verdicts; pytest_fsbench.cli -> cli."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def against_the_layers(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, imports in sorted(graph.items()):
        unit = unit_of(module)
        if not unit:
            continue
        for other in sorted(imports):
            theirs = unit_of(other)
            if theirs and RANK[theirs] < RANK[unit]:
                wrong.append(f"{module} -> {other} ({unit} is below {theirs})")
    return wrong


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = {}
    for module, imports in graph.items():
        if unit_of(module):
            units.setdefault(unit_of(module), set()).update(unit_of(o) for o in imports
                                                             if unit_of(o) and unit_of(o) != unit_of(module))
    return units


def test_every_unit_has_a_layer():
    graph = import_graph(PACKAGE)
    assert {unit_of(m) for m in graph if unit_of(m)} - set(RANK) == set(), \
        "give each new subpackage or top-level module a layer in LAYERS"


def test_imports_run_downwards_only():
    wrong = against_the_layers(import_graph(PACKAGE))
    assert not wrong, "imports against the layers (move the module down, or the shared piece below both):\n" + \
        "\n".join(wrong)


def test_no_cycle_between_subpackages():
    assert cycles(unit_graph(import_graph(PACKAGE))) == []


def test_the_top_level_holds_the_glue_and_the_ground_only():
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    packages = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
    assert len(top) <= MOST_TOP_LEVEL_MODULES, top
    assert len(packages) >= 8, packages


def test_each_subpackage_says_what_it_owns_and_may_import():
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = init.read_text().split('"""')
        assert len(doc) >= 3 and len(doc[1].split()) >= 25, f"{init.parent.name}/__init__.py needs its paragraph"


def test_the_check_finds_an_import_up_the_layers(tmp_path):
    package = make_package(tmp_path, {
        "pkg/__init__.py": "", "pkg/store/__init__.py": "", "pkg/views/__init__.py": "",
        "pkg/store/results.py": "def f():\n    from ..views import report\n",  # store reaches up to views
        "pkg/views/report.py": "from ..store import results\n",
    })
    wrong = against_the_layers(import_graph(package))
    assert wrong == ["pkg.store.results -> pkg.views (store is below views)",
                     "pkg.store.results -> pkg.views.report (store is below views)"]
    assert cycles(unit_graph(import_graph(package))) == [["store", "views", "store"]]


def test_every_test_file_has_a_name_of_its_own():
    """Tests mirror the package in folders without __init__.py, so pytest imports each file by its
    name alone: two files of one name end the whole run at collection."""
    tests = Path(__file__).resolve().parents[1]
    names = [path.name for path in tests.rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
