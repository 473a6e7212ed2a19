"""The workload registry: pure argv builders and output parsers, one module per tool. A module
that declares METRICS (what it measures) is a workload; its PARAMS become the benchmark cases'
options. Adding a workload is one module here (plus its case in benchmarks/ and one test file)."""

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
#: every metric fsbench can measure (PTS profiles' metrics, pts.*, have the profile's own units)
KNOWN_METRICS: tuple[MetricSpec, ...] = (
    *(spec for module in WORKLOAD_MODULES for spec in module.METRICS),
    *RUN_METRICS, MetricSpec(r"pts\.[\w.-]+", "", "pts.<profile>"),
)
#: every workload parameter, in the order of the modules
PARAMS: tuple[Param, ...] = tuple(param for module in WORKLOAD_MODULES for param in getattr(module, "PARAMS", ()))


def missing_tools(fixturenames: Iterable[str], which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """Why a case that takes these fixtures cannot run here: the tools of each workload whose
    parameters it takes that are not installed (empty when it can run)."""
    names = set(fixturenames)
    reasons = []
    for module in WORKLOAD_MODULES:
        if names & {param.fixture for param in getattr(module, "PARAMS", ())}:
            reasons += [f"{program} is not installed (Debian package {package})"
                        for program, package in getattr(module, "TOOLS", {}).items() if which(program) is None]
    return reasons
