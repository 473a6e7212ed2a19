"""pytest plugin: options, parametrisation over the fs matrix, fixtures, summary. Thin: the work
is done by matrix, session, target, runner and thresholds."""

from __future__ import annotations

import dataclasses
import datetime as dt
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import matrix
from .case import CaseSpec
from .errors import FsbenchError, UnsafeDevice, UsageError
from .host import probe
from .metrics import Metric
from .results import ResultsFile
from .datagen import parse_data
from .runner import CACHE_POLICIES, Unsupported, check_cache_policy, execute
from .session import FsbenchSession, RunSpec, Settings
from .system import run
from .target import Target
from .thresholds import Threshold, parse_threshold, violations
from .workloads.base import Workload

SESSION = pytest.StashKey[FsbenchSession]()
OLD_HANDLERS = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fsbench", "fsbench: filesystem benchmarks")

    def add(flag: str, ini: str, help: str, default: str, shown: str | None = None) -> None:
        group.addoption(flag, dest=ini, default=None, help=f"{help} (ini {ini}; default: {shown or default})")
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
    add("--data", "fsbench_data", "data written, comma list of zeros, random (incompressible) or N%% "
        "compressible", "random")
    add("--fsbench-results", "fsbench_results", "directory for the results files", "fsbench-results")
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
        results_dir=Path(config.rootpath, _value(config, "fsbench_results")),
        caches=matrix.parse_list(_value(config, "fsbench_cache"), CACHE_POLICIES, "cache policy", "--cache"),
        datas=tuple(dict.fromkeys(str(parse_data(d)) for d in _value(config, "fsbench_data").split(","))),
    )


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
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SESSION] = FsbenchSession(settings, probe(), run)
    _install_signal_handlers(config)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def _install_signal_handlers(config: pytest.Config) -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C, so every target is torn down."""
    if threading.current_thread() is not threading.main_thread():
        return
    config.stash[OLD_HANDLERS] = {sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}


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
    return [f"fsbench: fs={','.join(s.filesystems)} layouts={','.join(s.layouts)} devices: {where}; "
            f"cache={','.join(s.caches)} data={','.join(s.datas)}; results -> {session.results_path}"]


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
    reasons = session.unavailable(fsbench_spec)
    if reasons:
        pytest.skip(f"{fsbench_spec.id}: " + "; ".join(reasons))
    with session.target(fsbench_spec) as target:
        yield target


class Bench:
    """Runs workloads on the target, records their metrics and applies the thresholds."""

    def __init__(self, session: FsbenchSession, target: Target, run_spec: RunSpec, item: pytest.Item,
                 record_property) -> None:
        self.session = session
        self.target = target
        self.cache = run_spec.cache
        self.data = run_spec.data
        self.item = item
        self._record_property = record_property
        self.thresholds: list[Threshold] = list(session.settings.thresholds)
        for marker in item.iter_markers("fsbench_threshold"):
            self.thresholds += [parse_threshold(rule) for rule in marker.args]

    def own_data(self, tool: str) -> None:
        """Skip unless the case uses the default data: tool writes a pattern of its own, whose
        compressibility fsbench cannot set (only dd and fio honour --data)."""
        if self.data != RunSpec().data:
            pytest.skip(f"{self.target.id}: {tool} writes its own data pattern, so --data={self.data} "
                        "cannot apply; dd and fio honour --data")

    def run(self, workload: Workload, *, cache: str | None = None) -> list[Metric]:
        """Measure workload once with this case's cache policy (or `cache`); fail the test if a
        threshold is broken. Pass `data=fsbench.data` to workloads that write data."""
        policy = check_cache_policy(cache or self.cache)
        try:
            measurement = execute(workload, self.target, self.session.run, policy)
        except Unsupported as exc:
            pytest.skip(f"{self.target.id}: {exc}")
        self._record(workload, measurement.metrics, measurement.cache, measurement.completed.seconds)
        broken = violations(self.thresholds, self.target.spec, measurement.metrics)
        if broken:
            pytest.fail("\n".join(broken), pytrace=False)
        return measurement.metrics

    def _record(self, workload: Workload, metrics: list[Metric], cache: str, seconds: float) -> None:
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        records = []
        for metric in metrics:
            record = {
                "session": self.session.token, "test": self.item.nodeid, "case": self.target.id,
                "workload": workload.name, "workload_params": workload.params(), "cache": cache,
                "command_seconds": round(seconds, 3), "time": now, **metric.to_dict(),
                "manifest": self.target.manifest,
            }
            records.append(record)
            params = "".join(f"[{k}={v}]" for k, v in sorted(metric.params.items()))
            self._record_property(f"fsbench.{metric.name}{params}",
                                  f"{metric.value:.6g} {metric.unit} ({metric.direction.value} is better)")
        ResultsFile(self.session.results_path).append(records)
        self.session.recorded += records


@pytest.fixture
def fsbench_run() -> RunSpec:
    """Cache policy and data of the case (parametrised when several are asked for)."""
    return RunSpec()


@pytest.fixture
def fsbench(fsbench_target: Target, fsbench_run: RunSpec, request: pytest.FixtureRequest, record_property) -> Bench:
    """The benchmark helper: `fsbench.run(workload)` measures on this case's target."""
    return Bench(request.config.stash[SESSION], fsbench_target, fsbench_run, request.node, record_property)


SIDE_METRICS = ("cpu.", "disk.", "fs.")
SUMMARY_UNITS = ("MB/s", "ops/s", "s")


def in_summary(name: str, unit: str) -> bool:
    """The table shows each workload's headline figures; every metric is in the results file."""
    return unit in SUMMARY_UNITS and not name.startswith(SIDE_METRICS) and "flowop" not in name


def summary_rows(records: list[dict]) -> list[tuple[str, ...]]:
    """One row per measured metric, with the run's CPU cost and compression ratio beside it."""
    side: dict[str, dict[str, float]] = {}
    for r in records:
        if str(r["name"]).startswith(SIDE_METRICS):
            side.setdefault(str(r["test"]), {})[str(r["name"])] = float(r["value"])  # type: ignore[arg-type]
    rows = []
    for r in records:
        if not in_summary(str(r["name"]), str(r["unit"])):
            continue
        extra = side.get(str(r["test"]), {})
        cpu = extra.get("cpu.user", 0.0) + extra.get("cpu.system", 0.0) if "cpu.user" in extra else None
        ratio = extra.get("fs.compressratio")
        rows.append((str(r["test"]).split("::")[-1], str(r["name"]),
                     ",".join(f"{k}={v}" for k, v in sorted(r["params"].items())),  # type: ignore[union-attr]
                     f"{r['value']:.4g}", str(r["unit"]),
                     "" if cpu is None else f"{cpu:.0f}", "" if ratio is None else f"{ratio:.2f}"))
    return rows


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is None or not session.recorded:
        return
    terminalreporter.write_sep("=", "fsbench results (MB/s = 10^6 bytes/s)")
    header = ("case", "metric", "params", "value", "unit", "cpu%", "compress")
    rows = summary_rows(session.recorded)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        terminalreporter.write_line("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    terminalreporter.write_line("cpu% = user+system of all CPUs during the measured run; compress = the "
                                "filesystem's achieved ratio; all metrics in the results file:")
    terminalreporter.write_line(f"  {session.results_path}")
