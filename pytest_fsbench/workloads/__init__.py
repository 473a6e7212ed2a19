"""The workload registry: pure argv builders and output parsers, one module per tool. A module
that declares METRICS (what it measures) is a workload; its PARAMS become the benchmark cases'
options, its TOOLS (program -> Debian package) and `unavailable()` (reasons, e.g. a tool no
package provides) the skips decided before any target is built. Adding a workload is one
module here (plus its case in benchmarks/ and one test file), with the data it writes
(datagen.py). A workload may import only the ground (`metrics`, `sizes`, `errors`): it never
runs a command or touches a target itself."""

from __future__ import annotations

import importlib
import pkgutil
import shutil
from collections.abc import Callable, Iterable
from types import ModuleType

from ..metrics import RUN_METRICS, MetricSpec
from .params import Param


def _discover() -> tuple[ModuleType, ...]:
    modules = [importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)]
    return tuple(m for m in modules if hasattr(m, "METRICS"))


WORKLOAD_MODULES: tuple[ModuleType, ...] = _discover()
#: each workload's name, as its metrics begin and its benchmarks/test_NAME.py is named
WORKLOAD_NAMES: tuple[str, ...] = tuple(m.__name__.rsplit(".", 1)[-1] for m in WORKLOAD_MODULES)
#: every metric fsbench can measure (PTS profiles' metrics, pts.*, have the profile's own units)
KNOWN_METRICS: tuple[MetricSpec, ...] = (
    *(spec for module in WORKLOAD_MODULES for spec in module.METRICS),
    *RUN_METRICS, MetricSpec(r"pts\.[\w.-]+", "", "pts.<profile>"),
)


def _params(modules: tuple[ModuleType, ...]) -> tuple[Param, ...]:
    """Every workload parameter, in the order of the modules; a name two modules declare is an
    error at once (it would become one command-line option twice)."""
    seen: dict[str, str] = {}
    for module in modules:
        for param in getattr(module, "PARAMS", ()):
            if param.name in seen:
                raise RuntimeError(f"workload parameter --{param.name} is declared by {seen[param.name]} and "
                                   f"{module.__name__}; rename one")
            seen[param.name] = module.__name__
    return tuple(param for module in modules for param in getattr(module, "PARAMS", ()))


PARAMS: tuple[Param, ...] = _params(WORKLOAD_MODULES)

#: where programs live that root's PATH has and another user's may not
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"


def _which(program: str) -> str | None:
    return shutil.which(program) or shutil.which(program, path=SBIN)


def missing_tools(fixturenames: Iterable[str], which: Callable[[str], str | None] = _which) -> list[str]:
    """Why a case that takes these fixtures cannot run here: for each workload whose parameters
    it takes, its TOOLS that are not installed and what its own `unavailable()` says (a tool that
    no package provides, a kernel source tarball); empty when it can run."""
    names = set(fixturenames)
    reasons = []
    for module in WORKLOAD_MODULES:
        if names & {param.fixture for param in getattr(module, "PARAMS", ())}:
            reasons += [f"{program} is not installed (Debian package {package})"
                        for program, package in getattr(module, "TOOLS", {}).items() if which(program) is None]
            reasons += getattr(module, "unavailable", lambda: [])()
    return reasons
