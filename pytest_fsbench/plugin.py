"""pytest plugin: options, parametrisation over the fs matrix, fixtures, summary. Thin: the work
is done by matrix, session, target, runner and thresholds."""

from __future__ import annotations

import dataclasses
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import gate, matrix, tables
from .bench import Bench, case_key
from .case import CaseSpec
from .errors import UnsafeDevice, UsageError
from .host import probe
from .ordering import SessionResults
from .datagen import parse_data
from .repeat import RepeatPolicy, parse_percent
from .runner import CACHE_POLICIES
from .session import FsbenchSession, RunSpec, Settings
from .system import run
from .target import Target
from .thresholds import parse_threshold

SESSION = pytest.StashKey[FsbenchSession]()
OLD_HANDLERS = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fsbench", "fsbench: filesystem benchmarks")

    def add(flag: str, ini: str, help: str, default: str, shown: str | None = None) -> None:
        text = f"{help} (ini {ini}; default: {shown or default})"
        group.addoption(flag, dest=ini, default=None, help=text.replace("%", "%%"))  # argparse formats %
        parser.addini(ini, help=help, type="string", default=default)

    add("--fs", "fsbench_fs", "filesystems, comma list of ext4,xfs,btrfs,zfs", "ext4")
    add("--layout", "fsbench_layout", "layouts, comma list of single,raid0,raid1,raid10,raid5", "single")
    group.addoption("--fs-opt", dest="fsbench_fs_opts", action="append", default=[], metavar="FS:KEY=VALUE",
                    help="filesystem option, e.g. btrfs:compress=zstd, zfs:recordsize=64K, "
                         "ext4:mount=noatime, xfs:mkfs='-m crc=1'; repeat a key for one case per value "
                         "(ini fsbench_fs_opts, one per line)")
    parser.addini("fsbench_fs_opts", help="filesystem options, one FS:KEY=VALUE per line", type="linelist", default=[])
    add("--devices", "fsbench_devices", "real block devices to use instead of loop images; they are "
        "overwritten, after safety checks", "", "none, sparse images on loop devices")
    group.addoption("--wipe-devices", dest="fsbench_wipe", action="store_true", default=False,
                    help="let fsbench overwrite --devices that hold a partition table or filesystem "
                         "signature (never the root disk, never a mounted or held device)")
    add("--image-dir", "fsbench_image_dir", "directory for the loop devices' sparse image files", "/var/tmp/fsbench")
    add("--image-size", "fsbench_image_size", "size of each loop image, e.g. 2G", "2G")
    add("--cache", "fsbench_cache", "cache policies before each measured run, comma list of drop "
        "(sync + drop_caches; ZFS also export/import), remount, direct (O_DIRECT), warm", "drop")
    add("--data", "fsbench_data", "data written, comma list of zeros, random (incompressible) or N% "
        "compressible", "random")
    add("--store", "fsbench_store", "SQLite result store (every run of every session)", "fsbench-results/fsbench.db")
    add("--runs", "fsbench_runs", "measured runs per case (the minimum with --until-ci)", "6")
    add("--warmup", "fsbench_warmup", "runs first made and discarded on each target", "1")
    add("--until-ci", "fsbench_until_ci", "dynamic mode: repeat until the 95% CI of each headline median is "
        "within +-this % (budget: --max-runs, --max-time)", "", "off")
    add("--max-runs", "fsbench_max_runs", "dynamic mode: most measured runs per case", "30")
    add("--max-time", "fsbench_max_time", "dynamic mode: seconds per case after which no new run starts", "", "none")
    group.addoption("--interleave", dest="fsbench_interleave", action="store_true", default=False,
                    help="measure in rounds: every case once per round, --runs rounds (A B A B ...), each "
                         "on a freshly built target, so slow drift hits all configurations alike")
    group.addoption("--save", dest="fsbench_save", metavar="NAME", help="save this session as baseline NAME")
    group.addoption("--compare", dest="fsbench_compare", metavar="NAME",
                    help="compare with baseline NAME, a session id, or 'last' (the newest complete session)")
    group.addoption("--fail-on-regression", dest="fsbench_fail_on", action="append", default=[], metavar="RULE",
                    help="fail a case whose change vs the baseline is worse than PERCENT and significant: "
                         "5%% (every headline metric) or dd.write:3%%; needs --compare")
    add("--alpha", "fsbench_alpha", "significance level of the regression test", "0.05")
    group.addoption("--resume", dest="fsbench_resume", nargs="?", const="last", metavar="SESSION",
                    help="continue an interrupted session (default: the last one): finished tests are "
                         "skipped, a case's completed runs are kept")
    group.addoption("--threshold", dest="fsbench_thresholds", action="append", default=[], metavar="RULE",
                    help="minimum or maximum per metric, e.g. dd.write>=100MB/s, btrfs:dd.write>=150MB/s "
                         "(ini fsbench_thresholds, one per line)")
    parser.addini("fsbench_thresholds", help="threshold rules, one per line", type="linelist", default=[])


def _value(config: pytest.Config, name: str) -> str:
    given = config.getoption(name)
    return given if given is not None else config.getini(name)


def settings_from(config: pytest.Config) -> Settings:
    """Every option parsed and validated; UsageError before anything is created."""
    filesystems = matrix.parse_filesystems(_value(config, "fsbench_fs"))
    layouts = matrix.parse_layouts(_value(config, "fsbench_layout"))
    fs_opts = list(config.getini("fsbench_fs_opts")) + list(config.getoption("fsbench_fs_opts"))
    devices_text = _value(config, "fsbench_devices")
    devices = matrix.parse_device_list(devices_text) if devices_text else ()
    thresholds = [parse_threshold(t) for t in list(config.getini("fsbench_thresholds")) + config.getoption("fsbench_thresholds")]
    return Settings(
        filesystems=filesystems,
        layouts=layouts,
        specs=tuple(matrix.build_matrix(filesystems, layouts, fs_opts)),
        devices=devices,
        wipe=config.getoption("fsbench_wipe"),
        image_dir=Path(_value(config, "fsbench_image_dir")),
        image_size=matrix.parse_image_size(_value(config, "fsbench_image_size")),
        thresholds=tuple(thresholds),
        store_path=Path(config.rootpath, _value(config, "fsbench_store")),
        repeat=repeat_policy(config),
        interleave=config.getoption("fsbench_interleave"),
        save=config.getoption("fsbench_save"),
        compare=config.getoption("fsbench_compare"),
        resume=config.getoption("fsbench_resume"),
        regression_rules=tuple(gate.parse_rule(r) for r in config.getoption("fsbench_fail_on")),
        alpha=parse_alpha(_value(config, "fsbench_alpha")),
        args=tuple(config.invocation_params.args),
        caches=matrix.parse_list(_value(config, "fsbench_cache"), CACHE_POLICIES, "cache policy", "--cache"),
        datas=tuple(dict.fromkeys(str(parse_data(d)) for d in _value(config, "fsbench_data").split(","))),
    )


def _int(text: str, option: str) -> int:
    if not text.strip().isdigit():
        raise UsageError(f"{option}={text!r}: give a whole number")
    return int(text)


def repeat_policy(config: pytest.Config) -> RepeatPolicy:
    until = _value(config, "fsbench_until_ci")
    max_time = _value(config, "fsbench_max_time")
    policy = RepeatPolicy(
        runs=_int(_value(config, "fsbench_runs"), "--runs"),
        warmup=_int(_value(config, "fsbench_warmup"), "--warmup"),
        until_ci=parse_percent(until, "--until-ci") if until else None,
        max_runs=_int(_value(config, "fsbench_max_runs"), "--max-runs"),
        max_seconds=float(_int(max_time, "--max-time")) if max_time else None,
    )
    if config.getoption("fsbench_interleave") and policy.until_ci is not None:
        raise UsageError("--interleave makes one measured run per round; it cannot be combined with --until-ci")
    return policy


def parse_alpha(text: str) -> float:
    try:
        alpha = float(text)
    except ValueError:
        alpha = -1.0
    if not 0 < alpha < 0.5:
        raise UsageError(f"--alpha={text!r}: give a significance level between 0 and 0.5, e.g. 0.05")
    return alpha


def check_gate_options(settings: Settings) -> None:
    if settings.regression_rules and not settings.compare:
        raise UsageError("--fail-on-regression needs a baseline: add --compare NAME (or --compare last)")


def check_real_devices(settings: Settings) -> Settings:
    if not settings.devices:
        return settings
    from . import safety  # pyudev is only needed for real devices

    try:
        infos = safety.check_devices(list(settings.devices), wipe=settings.wipe)
    except UnsafeDevice as exc:
        raise UsageError(str(exc)) from None
    return dataclasses.replace(settings, device_infos=tuple(infos))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fsbench_threshold(*rules): thresholds for this test, e.g. 'dd.write>=100MB/s'")
    config.addinivalue_line("markers", "root: needs root (loop devices, mkfs, mount)")
    try:
        settings = check_real_devices(settings_from(config))
        check_gate_options(settings)
        config.stash[SESSION] = FsbenchSession(settings, probe(), run)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.register(Rounds(), "fsbench-rounds")
    _install_signal_handlers(config)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def _install_signal_handlers(config: pytest.Config) -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C, so every target is torn down."""
    if threading.current_thread() is not threading.main_thread():
        return
    config.stash[OLD_HANDLERS] = {sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    fsbench = session.config.stash.get(SESSION, None)
    if fsbench is None:
        return
    note = fsbench.finish(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if note and reporter is not None:
        reporter.write_line(f"fsbench: {note}")


def pytest_unconfigure(config: pytest.Config) -> None:
    for sig, handler in config.stash.get(OLD_HANDLERS, {}).items():
        signal.signal(sig, handler)
    session = config.stash.get(SESSION, None)
    if session is not None:
        session.close()


def pytest_report_header(config: pytest.Config) -> list[str]:
    session = config.stash[SESSION]
    s = session.settings
    where = ", ".join(s.devices) if s.devices else f"loop images of {s.image_size >> 20} MiB in {s.image_dir}"
    runs = (f"{s.repeat.runs}+ runs until the median's 95% CI is within {s.repeat.until_ci:g}%"
            if s.repeat.until_ci else f"{s.repeat.runs} runs") + f" after {s.repeat.warmup} warm-up"
    lines = [f"fsbench: fs={','.join(s.filesystems)} layouts={','.join(s.layouts)} devices: {where}",
             f"fsbench: {runs}{', interleaved' if s.interleave else ''}; cache={','.join(s.caches)} "
             f"data={','.join(s.datas)}; store {s.store_path}"]
    if session.baseline_id is not None:
        lines.append(f"fsbench: comparing with {s.compare} (session {session.baseline_id})")
    if session.resumed:
        lines.append(f"fsbench: resuming session {session.session_id}; {len(session.finished_tests)} tests already done")
    return lines


class Rounds:
    """--interleave: one parametrisation per round; registered as its own plugin so that its
    hook runs last and the round comes last in test ids (test_x[btrfs-raid1-64K-round2])."""

    @pytest.hookimpl(trylast=True)
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        settings = metafunc.config.stash[SESSION].settings
        if settings.interleave and "fsbench_round" in metafunc.fixturenames:
            rounds = range(1, settings.repeat.runs + 1)
            metafunc.parametrize("fsbench_round", list(rounds), ids=[f"round{r}" for r in rounds])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Interleaved: every case's round 1, then every case's round 2, ... (a stable sort)."""
    def round_of(item: pytest.Item) -> int:
        callspec = getattr(item, "callspec", None)
        return callspec.params.get("fsbench_round", 0) if callspec else 0

    items.sort(key=round_of)


@pytest.hookimpl(tryfirst=True)  # the case id comes first in test ids: test_x[btrfs-raid1-64K]
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fsbench_spec" in metafunc.fixturenames:
        specs = metafunc.config.stash[SESSION].settings.specs
        metafunc.parametrize("fsbench_spec", specs, ids=[spec.id for spec in specs])
    if "fsbench_run" in metafunc.fixturenames:
        runs = metafunc.config.stash[SESSION].settings.run_specs()
        if runs != [RunSpec()]:
            metafunc.parametrize("fsbench_run", runs, ids=[run.id for run in runs])


def pytest_collection_finish(session: pytest.Session) -> None:
    """With real devices, print which devices each case will overwrite before anything runs."""
    fsbench = session.config.stash[SESSION]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if not fsbench.settings.device_infos or reporter is None:
        return
    from .safety import format_plan

    specs = {item.callspec.params["fsbench_spec"] for item in session.items
             if hasattr(item, "callspec") and "fsbench_spec" in item.callspec.params}
    infos = fsbench.settings.device_infos
    plan = [(spec.id, list(infos[: spec.devices_needed])) for spec in sorted(specs, key=lambda s: s.id)]
    reporter.write_line("fsbench plan, cases run one after another on these devices:")
    reporter.write_line(format_plan(plan))


@pytest.fixture
def fsbench_target(fsbench_spec: CaseSpec, request: pytest.FixtureRequest) -> Iterator[Target]:
    """A freshly built, mounted filesystem for this case; torn down after the test, always."""
    session = request.config.stash[SESSION]
    if case_key(request.node.nodeid) in session.finished_tests:
        pytest.skip(f"{fsbench_spec.id}: finished in session {session.session_id} before it was interrupted")
    reasons = session.unavailable(fsbench_spec)
    if reasons:
        pytest.skip(f"{fsbench_spec.id}: " + "; ".join(reasons))
    with session.target(fsbench_spec) as target:
        yield target


@pytest.fixture
def fsbench_run() -> RunSpec:
    """Cache policy and data of the case (parametrised when several are asked for)."""
    return RunSpec()


@pytest.fixture
def fsbench_round() -> int:
    """The round of an interleaved session (parametrised with --interleave)."""
    return 0


@pytest.fixture
def fsbench(fsbench_target: Target, fsbench_run: RunSpec, fsbench_round: int, request: pytest.FixtureRequest,
            record_property) -> Bench:
    """The benchmark helper: `fsbench.run(workload)` measures on this case's target."""
    session = request.config.stash[SESSION]
    return Bench(session, fsbench_target, fsbench_run, request.node, record_property,
                 interleaved=session.settings.interleave)


@pytest.fixture
def fsbench_results(request: pytest.FixtureRequest) -> SessionResults:
    """This session's measured samples by case and metric, for ordering assertions."""
    return SessionResults(request.config.stash[SESSION])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Remember in the store which fsbench tests finished, so --resume can skip them."""
    outcome = yield
    report = outcome.get_result()
    callspec = getattr(item, "callspec", None)
    if callspec is None or "fsbench_spec" not in callspec.params or report.when != "call":
        return
    session = item.config.stash[SESSION]
    session.store.record_test(session.session_id, case_key(item.nodeid), report.outcome)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is None or not session.results:
        return
    write = terminalreporter.write_line
    terminalreporter.write_sep("=", "fsbench results (median of measured runs; MB/s = 10^6 bytes/s)")
    for line in tables.results_table(session.results):
        write(line)
    if session.baseline_id is not None:
        terminalreporter.write_sep("-", f"fsbench comparison with {session.settings.compare} (session {session.baseline_id})")
        for line in tables.comparison_table(session.results, session.settings.alpha):
            write(line)
    write(f"store: {session.settings.store_path} (session {session.session_id}); "
          f"fsbench compare {session.session_id} OTHER, fsbench export {session.session_id}")
