"""Repository-level pytest configuration for the benchmark cases in benchmarks/.

The fsbench plugin itself is loaded through its pytest11 entry point (pip install -e .); this file
only adds the workload parameters the cases here use.
"""

import pytest

from pytest_fsbench.sizes import parse_size


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fsbench-cases", "fsbench benchmark cases (benchmarks/)")
    group.addoption("--dd-bs", default="1M", help="dd block sizes, comma list (default 1M)")
    group.addoption("--dd-size", default="256M", help="bytes dd writes and reads per case (default 256M)")


def _sizes(config: pytest.Config, option: str) -> list[str]:
    values = [v.strip() for v in config.getoption(option).split(",")]
    for value in values:
        try:
            parse_size(value)
        except ValueError as exc:
            raise pytest.UsageError(f"--{option.replace('_', '-')}: {exc}") from None
    return values


def pytest_configure(config: pytest.Config) -> None:
    _sizes(config, "dd_bs")
    _sizes(config, "dd_size")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dd_bs" in metafunc.fixturenames:
        metafunc.parametrize("dd_bs", _sizes(metafunc.config, "dd_bs"))


@pytest.fixture
def dd_size(request: pytest.FixtureRequest) -> str:
    return _sizes(request.config, "dd_size")[0]
