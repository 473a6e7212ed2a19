"""A user's test file may import a module by the path it had before the package was grouped by
concern (issue 31): it gets the module itself, with a DeprecationWarning naming the new path."""

import importlib
import sys

import pytest

from pytest_fsbench import MOVED


@pytest.mark.parametrize("former", sorted(MOVED))
def test_a_former_path_imports_the_module_itself(former):
    sys.modules.pop(former, None)
    with pytest.warns(DeprecationWarning, match=MOVED[former]):
        module = importlib.import_module(former)
    assert module is importlib.import_module(MOVED[former])
    assert module.__spec__.name == MOVED[former]  # the module keeps its own spec


def test_from_imports_of_former_paths_and_of_packages_that_kept_their_names():
    for former in ("pytest_fsbench.export", "pytest_fsbench.export.json", "pytest_fsbench.measurement"):
        sys.modules.pop(former, None)
    with pytest.warns(DeprecationWarning):
        from pytest_fsbench.export.json import export_session
        from pytest_fsbench.measurement import measure_run
    from pytest_fsbench.kernels import Kernel
    from pytest_fsbench.store import Store
    from pytest_fsbench.system import execute
    from pytest_fsbench.workloads.dd import METRICS
    assert export_session.__module__ == "pytest_fsbench.views.json_export"
    assert measure_run.__module__ == "pytest_fsbench.measure.run"
    assert (Kernel.__module__, Store.__module__, execute.__module__) == (
        "pytest_fsbench.kernels.kernel", "pytest_fsbench.store.results", "pytest_fsbench.system.commands")
    assert METRICS
