"""The workload parameters of fsbench's benchmark cases (pytest_fsbench.benchmarks, the repository's
benchmarks/), as a pytest plugin of their own (entry point fsbench_cases), so that an installed
fsbench carries them: `pytest --pyargs pytest_fsbench.benchmarks`. A parameter given as a comma
list becomes one case per value (a sweep), e.g. --iozone-record=64K,128K,1M.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import Callable

import psutil
import pytest

from . import pts
from .errors import UsageError
from .matrix import check_no_repeats
from .options import given_twice
from .ptsfile import composite_xml
from .plugin import SESSION
from .sizes import MARGIN, human_size, parse_size
from .workloads import PARAMS, missing_tools
from .workloads.params import LIST, ONE, SWEEP, Param


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fsbench-cases", "fsbench benchmark cases (pytest_fsbench.benchmarks)")
    for param in PARAMS:
        group.addoption(f"--{param.name}", default=None,
                        help=f"{param.help} ({param.kind}; default {param.default}; ini: {param.ini})")
        parser.addini(param.ini, f"default of --{param.name}", default=None)
    group.addoption("--pts-binary", default=None,
                    help="the phoronix-test-suite launcher (default: $FSBENCH_PTS, else PATH's)")
    group.addoption("--pts-profile", default="fsbench-dd",
                    help=f"the fsbench PTS profile test_pts runs, of {', '.join(pts.QUICK_OPTIONS)} (default fsbench-dd)")
    group.addoption("--pts-options", default="",
                    help="its run options as IDENTIFIER=VALUE;... with the menu values of its "
                         "test-definition.xml, e.g. 'test=read;cache=drop' (others: quick defaults)")
    group.addoption("--pts-result", default=None,
                    help="the PTS result file name (default fsbench-<date>-<time> of the session)")
    group.addoption("--pts-system-tools", action="store_true",
                    help="let the profiles use the system's tool instead of building the pinned release; "
                         "they then install offline (also: FSBENCH_PTS_SYSTEM_TOOLS=1)")


def values(config: pytest.Config, param: Param) -> list[str]:
    raw = config.getoption(param.fixture)
    if raw is None:
        raw = config.getini(param.ini) or param.default
    if not raw.strip():
        raise pytest.UsageError(f"--{param.name}={raw!r}: give a value or leave the option out")
    items = [v.strip() for v in raw.split(",")]
    for item in items:
        try:
            param.check(item)
        except ValueError as exc:
            raise pytest.UsageError(f"--{param.name}={raw}: {exc}") from None
    if param.kind == ONE and len(items) != 1:
        raise pytest.UsageError(f"--{param.name}={raw}: give one value")
    try:
        check_no_repeats(items, f"--{param.name}={raw}")
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    return items


#: the options of this plugin that take one value each (a list is one value: --dd-bs=64K,1M)
ONE_VALUE = (*(f"--{param.name}" for param in PARAMS), "--pts-binary", "--pts-profile", "--pts-options", "--pts-result")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a long case (e.g. a kernel build); -m 'not slow' leaves it out")
    twice = given_twice(config.invocation_params.args, ONE_VALUE)
    if twice:
        raise pytest.UsageError(twice)
    for param in PARAMS:
        values(config, param)
    by_name = {p.name: p for p in PARAMS}
    [dd_size] = values(config, by_name["dd-size"])
    for bs in values(config, by_name["dd-bs"]):
        if parse_size(dd_size) % parse_size(bs):
            raise pytest.UsageError(f"--dd-size={dd_size} is not a multiple of --dd-bs={bs}; "
                                    "give a size that is a whole number of blocks")
    config.stash[PTS_SETTINGS] = pts_settings(config)


PTS_SETTINGS = pytest.StashKey["PtsSettings"]()


@dataclass(frozen=True)
class PtsSettings:
    profile: str
    version: str
    options: tuple[tuple[str, str], ...]
    choices: tuple[tuple[str, int], ...]
    result: str | None
    binary: str | None
    system_tools: bool


def pts_settings(config: pytest.Config) -> PtsSettings:
    """--pts-* checked against the profile's own menus (a bad value is a usage error, not a run
    with PTS's default in its place)."""
    profile = config.getoption("pts_profile")
    available = pts.available_profiles()
    if profile not in available:
        raise pytest.UsageError(f"--pts-profile={profile}: choose one of {', '.join(available)}")
    try:
        given = pts.parse_options(config.getoption("pts_options"))
        options = tuple({**pts.QUICK_OPTIONS[profile], **dict(given)}.items())
        choices = pts.option_choices(available[profile] / "test-definition.xml", options)
        result = config.getoption("pts_result")
        if result is not None:
            pts.check_result_name(result)
    except pts.PtsError as exc:
        raise pytest.UsageError(f"--pts-*: {exc}") from None
    version = available[profile].name.rsplit("-", 1)[1]
    system_tools = config.getoption("pts_system_tools") or os.environ.get(pts.SYSTEM_TOOLS_ENV) == "1"
    return PtsSettings(profile, version, options, choices, result, config.getoption("pts_binary"), system_tools)


@pytest.fixture
def pts_workload(request: pytest.FixtureRequest, fsbench):
    """--pts-profile as a workload on this case's target (skips when PTS is absent). After the
    case, the session's cases so far are written into its PTS result file (--pts-result, else
    fsbench-<session start>), where PTS shows, merges and uploads them."""
    settings = request.config.stash[PTS_SETTINGS]
    launcher = pts.find_pts(settings.binary)
    if launcher is None:
        pytest.skip(pts.MISSING_REASON)
    user = pts.user_path()
    pts.install_definitions(user, system_tools=settings.system_tools)
    session = fsbench.session
    yield pts.PtsWorkload(
        pts=launcher, profile=settings.profile, version=settings.version, options=settings.options,
        choices=settings.choices, identifier=fsbench.target.id,
        description=f"fsbench session of {session.started}: {' '.join(session.settings.args)}"[:400],
        user=user, system_tools=settings.system_tools)
    stamp = dt.datetime.fromisoformat(session.started).strftime("%Y%m%d-%H%M%S")
    name = settings.result or f"fsbench-{stamp}"
    composite = pts.result_file(name, user)
    composite.parent.mkdir(parents=True, exist_ok=True)
    composite.write_bytes(composite_xml(session.store, session.session_id, title=name))


@pytest.hookimpl(tryfirst=True)  # before the fsbench plugin opens the store for a session
def pytest_collection_finish(session: pytest.Session) -> None:
    """A workload value that no case's devices could hold, even whole, is a usage error before
    any target is built (issue 23: --dd-size=100T built each target, then failed each test).
    One that fits the devices but not the filesystem built on them is still found per case,
    before its first run, once the target tells its free space (Bench)."""
    settings = session.config.stash[SESSION].settings
    ram = psutil.virtual_memory().total
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "fsbench_spec" not in callspec.params or item.get_closest_marker("skip"):
            continue
        spec = callspec.params["fsbench_spec"]
        room = settings.room(spec)
        for param in PARAMS:
            if param.holds is None or param.fixture not in item.fixturenames or room is None:
                continue
            value = callspec.params.get(param.fixture) or values(session.config, param)[0]
            needed = param.holds(value, ram) + MARGIN
            if needed > room[0]:
                larger = "larger --devices" if settings.devices else "a larger --image-size"
                raise pytest.UsageError(
                    f"--{param.name}={value}: {spec.id} needs about {human_size(needed)} and its devices hold "
                    f"{human_size(room[0])} ({room[1]}); give a smaller --{param.name} or {larger}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A case whose workload's tool is missing skips at once, before a target is built for it."""
    for item in items:
        reasons = missing_tools(getattr(item, "fixturenames", ()))
        if reasons:
            item.add_marker(pytest.mark.skip(reason="; ".join(reasons)))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for param in PARAMS:
        if param.kind == SWEEP and param.fixture in metafunc.fixturenames:
            metafunc.parametrize(param.fixture, values(metafunc.config, param))


def _single(param: Param) -> Callable:
    @pytest.fixture(name=param.fixture)
    def fixture(request: pytest.FixtureRequest):
        found = values(request.config, param)
        return found if param.kind == LIST else found[0]

    return fixture


# a fixture for every parameter that is not a sweep (a sweep is parametrised instead)
for _param in PARAMS:
    if _param.kind != SWEEP:
        globals()[f"_fixture_{_param.fixture}"] = _single(_param)
