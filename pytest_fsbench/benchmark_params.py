"""The workload parameters of fsbench's benchmark cases (pytest_fsbench.benchmarks, the repository's
benchmarks/), as a pytest plugin of their own (entry point fsbench_cases), so that an installed
fsbench carries them: `pytest --pyargs pytest_fsbench.benchmarks`. A parameter given as a comma
list becomes one case per value (a sweep), e.g. --iozone-record=64K,128K,1M.
"""

from __future__ import annotations

from typing import Callable

import shutil

import psutil
import pytest

from .errors import UsageError
from .matrix import check_no_repeats
from .options import given_twice
from .kernels.kernel import ram_of
from .plugin import SESSION
from .sizes import MARGIN, human_size, parse_size, resolve_size
from .workloads import PARAMS, missing_tools
from .workloads.datagen import parse_data
from .workloads.params import LIST, ONE, SWEEP, Param
from .sizes import existing_ancestor


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fsbench-cases", "fsbench benchmark cases (pytest_fsbench.benchmarks)")
    for param in PARAMS:
        group.addoption(f"--{param.name}", default=None,
                        help=f"{param.help} ({param.kind}; default {param.default}; ini: {param.ini})")
        parser.addini(param.ini, f"default of --{param.name}", default=None)


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
ONE_VALUE = tuple(f"--{param.name}" for param in PARAMS)


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


#: the workload parameters that size each I/O, which direct I/O (--cache=direct) moves in whole sectors
DIRECT_IO_SIZES = ("dd-bs", "fio-bs")


def check_direct_io_sizes(config: pytest.Config, caches: tuple[str, ...], devices: bool) -> None:
    """An I/O size direct I/O cannot move (issue 34: --dd-bs=1 --cache=direct built the target,
    then dd failed with EINVAL): a usage error before anything is built. fsbench's loop devices
    have 512-byte sectors; real devices may have 4K ones."""
    if "direct" not in caches:
        return
    sector = 4096 if devices else 512
    by_name = {param.name: param for param in PARAMS}
    for name in DIRECT_IO_SIZES:
        for value in values(config, by_name[name]):
            if parse_size(value) % sector:
                raise pytest.UsageError(f"--{name}={value} with --cache=direct: direct I/O moves whole sectors of "
                                        f"{sector} bytes{' (real devices may have 4K ones)' if devices else ''}; "
                                        f"give a multiple of {sector} or leave direct out of --cache")


@pytest.hookimpl(tryfirst=True)  # before the fsbench plugin opens the store for a session
def pytest_collection_finish(session: pytest.Session) -> None:
    """A workload value that no case's devices could hold, even whole, is a usage error before
    any target is built (issue 23: --dd-size=100T built each target, then failed each test).
    One that fits the devices but not the filesystem built on them is still found per case,
    before its first run, once the target tells its free space (Bench)."""
    settings = session.config.stash[SESSION].settings
    check_direct_io_sizes(session.config, settings.caches, bool(settings.devices))
    host_ram = psutil.virtual_memory().total
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "fsbench_spec" not in callspec.params or item.get_closest_marker("skip"):
            continue
        spec = callspec.params["fsbench_spec"]
        room = settings.room(spec)
        ram = ram_of(spec.kernel, settings.memory, host_ram)
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
            if not settings.devices:
                check_image_dir_room(settings, spec, param, value, param.holds(value, ram))
    check_iozone_records_fit(session, settings, host_ram)


def check_iozone_records_fit(session: pytest.Session, settings, host_ram: int) -> None:
    """An IOzone test whose every record size is larger than every file it would write could run
    no case (each would skip): a usage error naming the values (issue 44: skipped, exit 0). Some
    sizes of a sweep that do not fit others skip as IOzone's own grid does."""
    found: dict[str, list[tuple[bool, str, str, str]]] = {}
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        name = getattr(item, "originalname", "")
        if callspec is None or "iozone_record" not in callspec.params or item.get_closest_marker("skip"):
            continue
        params = callspec.params
        spec = params["fsbench_spec"]
        ram = ram_of(spec.kernel, settings.memory, host_ram)
        processes = params.get("iozone_processes")
        per_file = parse_size(resolve_size(params["iozone_file"], ram)) // int(processes or 1)
        fits = parse_size(params["iozone_record"]) <= per_file
        found.setdefault(name, []).append((fits, params["iozone_record"], params["iozone_file"], processes or ""))
    for name, cases in found.items():
        if any(fits for fits, *_ in cases):
            continue
        records = ",".join(dict.fromkeys(record for _, record, _, _ in cases))
        files = ",".join(dict.fromkeys(file for _, _, file, _ in cases))
        each = (f"each process's file (--iozone-file={files} shared by --iozone-processes="
                f"{','.join(dict.fromkeys(p for *_, p in cases))})" if cases[0][3] else f"--iozone-file={files}")
        raise pytest.UsageError(f"--iozone-record={records} is larger than {each}, so no case of {name} could run "
                                "(IOzone's record must fit in its file); give a smaller --iozone-record or a larger "
                                "--iozone-file")


#: how many times a layout stores what is written (its images grow by that much)
COPIES = {"raid1": 2.0, "raid10": 2.0, "raid5": 1.5}


def check_image_dir_room(settings, spec, param: Param, value: str, written: int) -> None:
    """The loop images are sparse: what a case writes (as often as its layout stores it) and the
    data set fsbench stages for it must fit the image directory's free space, or the images
    cannot grow mid-run (issue 34: a 512M dd on a 720M tmpfs, a 700M image: the filesystem went
    read-only and the run failed in 78 lines)."""
    images = min(int(written * COPIES.get(spec.layout, 1.0)), spec.devices_needed * settings.image_size)
    datas = [d for d in settings.datas if not parse_data(d).zeros] if param.staged else []
    staged = written * len(datas)
    existing = existing_ancestor(settings.image_dir)
    free = shutil.disk_usage(existing).free
    if images + staged + MARGIN > free:
        also = f" and the {human_size(staged)} of data fsbench prepares for it first" if staged else ""
        raise pytest.UsageError(
            f"--{param.name}={value}: {spec.id} writes about {human_size(images)} into its loop images{also}, and "
            f"--image-dir={settings.image_dir} has {human_size(free)} free; give a smaller --{param.name}, or an "
            "--image-dir with more room")


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
