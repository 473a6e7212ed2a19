"""pytest plugin: options, parametrisation over the fs matrix, fixtures, summary. Thin: the work
is done by matrix, session, target, measurement and thresholds."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from .targets import preflight
from .measure import progress
from .views import answer, tables
from .bench import Bench, InconclusiveGateWarning, case_key, inconclusive_warning
from .case import CaseSpec
from .errors import FsbenchError, UnsafeDevice, UsageError
from .kernels.probe import probe
from .options import (APPEND, FLAG, OPTIONAL, Option, check_replaceable, special_kind, unexpanded_home,
                      write_whole)
from .verdicts.assertions import SessionResults
from .verdicts.gate import gates_nothing
from .workloads import WORKLOAD_NAMES
from .session import FsbenchSession
from .settings import CONTROL_MB, OPTIONS, Conditions, Settings, settings_from
from .store.databases import redact
from .store.results import StoreError, check_store_place
from .system import interrupts
from .system.daemons import serialized
from .filesystems import DAEMONS
from .system.commands import execute
from .targets.target import Target
from .terminal import CaseLines, is_case

SESSION = pytest.StashKey[FsbenchSession]()
OLD_HANDLERS = pytest.StashKey[dict]()
REPORTED = pytest.StashKey[set]()
PROGRESS = pytest.StashKey[progress.Progress]()
COLLECTED = pytest.StashKey[bool]()  # set once collection (and the checks after it) finished
#: the columns fsbench's lines of prose may take: the terminal's width, at most 120 (issue 35)
COLUMNS = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fsbench", "fsbench: filesystem benchmarks")
    for option in OPTIONS:
        ini = f" (ini {option.dest})" if option.ini else ""
        help = (option.help_text() + ini).replace("%", "%%")  # argparse formats %
        if option.kind == FLAG:
            group.addoption(option.flag, dest=option.dest, action="store_true", default=False, help=help)
        elif option.kind == APPEND:
            group.addoption(option.flag, dest=option.dest, action="append", default=[], metavar=option.metavar,
                            help=help)
        elif option.kind == OPTIONAL:
            group.addoption(option.flag, dest=option.dest, nargs="?", const=option.const, metavar=option.metavar,
                            help=help)
        else:
            group.addoption(option.flag, dest=option.dest, default=None, metavar=option.metavar, help=help)
        if option.ini:
            parser.addini(option.dest, help=option.help, type="linelist" if option.kind == APPEND else "string",
                          default=[] if option.kind == APPEND else option.default)


def raw_value(config: pytest.Config, option: Option):
    """The option's text as given: command line over ini over default (lists: ini then command line)."""
    given = config.getoption(option.dest)
    if option.kind == APPEND:
        return [*(config.getini(option.dest) if option.ini else []), *given]
    if option.kind == FLAG or given is not None or not option.ini:
        return given
    return config.getini(option.dest) or option.default  # an empty ini line: the default


def settings_from_config(config: pytest.Config) -> Settings:
    """Every option parsed and validated; UsageError before anything is created."""
    check_path_spelling(config.invocation_params.args)
    args = tuple(config.invocation_params.args)
    # a --store typed on the command line is where the user is, as --report and --image-dir are
    # (issue 34: --store=notes.txt in another directory named rootdir's notes.txt); the ini's, where it is
    typed = any(arg == "--store" or arg.startswith("--store=") for arg in args)
    return settings_from(lambda option: raw_value(config, option),
                         Path(config.invocation_params.dir) if typed else Path(config.rootpath), args)


def check_path_spelling(args: tuple[str, ...], options=OPTIONS) -> None:
    """pytest settles its rootdir from the path-like words of the command line before it knows
    fsbench's options, so `--devices /dev/sdb` makes /dev the rootdir; only `--devices=/dev/sdb`
    is safe."""
    flags = {option.flag for option in options if option.path}
    for arg, following in zip(args, args[1:]):
        if arg in flags and not following.startswith("-"):
            raise UsageError(f"write {arg}={following} (with '='): pytest would take {following} for a test path "
                             "and choose its rootdir from it")


def check_real_devices(settings: Settings) -> Settings:
    if not settings.devices:
        return settings
    from .targets import safety  # pyudev is only needed for real devices

    try:
        infos = safety.check_devices(list(settings.devices), wipe=settings.wipe)
    except UnsafeDevice as exc:
        raise UsageError(str(exc)) from None
    return dataclasses.replace(settings, device_infos=tuple(infos))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fsbench_threshold(*rules): thresholds for this test, e.g. 'dd.write>=100MB/s'")
    config.addinivalue_line("markers", "root: needs root (loop devices, mkfs, mount)")
    config.addinivalue_line("markers", "fsbench_cases(*case_ids): the test needs these cases in the session's matrix "
                            "(e.g. 'btrfs-raid10'); it is deselected when --fs/--layout/--fs-opt leave one out")
    config.addinivalue_line("markers", "fsbench_own_data(tool): the test's tool writes a data pattern of its own, so "
                            "it runs once per --cache policy with that pattern, never with a --data it cannot honour")
    try:
        settings = check_real_devices(settings_from_config(config))
        check_junitxml(getattr(config.option, "xmlpath", None), settings.store_path)
        session = FsbenchSession(settings, probe(), serialized(execute, DAEMONS))
        if settings.resume or settings.compare or settings.save:
            session.open_store()  # a bad --resume/--compare is a usage error before collection
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SESSION] = session
    config.stash[REPORTED] = set()
    config.stash[COLUMNS] = progress.terminal_width()
    config.pluginmanager.register(Rounds(), "fsbench-rounds")
    config.pluginmanager.register(SessionEnd(), "fsbench-session-end")
    config.pluginmanager.register(CaseLines(config, lambda: session.results, config.stash[COLUMNS],
                                            lambda: session.targets.booting_seconds, session.history_prior),
                                  "fsbench-case-lines")
    _install_signal_handlers(config)


def check_junitxml(where: str | None, store: Path | str) -> None:
    """pytest's --junitxml replaces its file at the end: never the session's store, another SQLite
    database or an existing file that is no JUnit XML (found by the sweep: --junitxml=STORE
    replaced the store with the XML)."""
    if not where:
        return
    path = Path(where)
    kind = special_kind(path)
    if kind:  # found by issue 44's sweep: pytest opened the FIFO at the session's end and hung there
        raise UsageError(f"--junitxml={where}: is {kind}, not a file; name a regular file")
    home = unexpanded_home(where)
    if home:
        raise UsageError(f"--junitxml={where}: {home}")
    try:
        check_replaceable(path, "junit", [store], force=True)
        with open(path, "rb") if path.is_file() else contextlib.nullcontext(None) as file:
            head = file.read(512).lstrip() if file is not None else b""
    except (ValueError, OSError) as exc:
        raise UsageError(f"--junitxml={where}: {exc}") from None
    if head and not head.startswith((b"<?xml", b"<testsuite")):
        raise UsageError(f"--junitxml={where}: exists and is no JUnit XML file, which pytest would replace; name a "
                         "new file")


def _install_signal_handlers(config: pytest.Config) -> None:
    """The stop signals stop the session as interrupts.py says: like Ctrl-C, every target torn
    down, a teardown under way finished first."""
    capture = config.pluginmanager.get_plugin("capturemanager")

    def say(line: str) -> None:  # past pytest's capture of standard error, which holds it during a test
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            sys.stderr.write(f"\n{line}\n")
            sys.stderr.flush()

    config.stash[OLD_HANDLERS] = interrupts.install(say)


@pytest.hookimpl(trylast=True)  # after pytest's own sessionfinish has torn every target down
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    fsbench = session.config.stash.get(SESSION, None)
    if fsbench is None:
        return
    if session.config.option.collectonly or exitstatus == pytest.ExitCode.USAGE_ERROR:
        fsbench.forget()  # nothing measured by design, or refused before anything ran
        return
    collected = {case_key(item.nodeid) for item in session.items if is_case(item)}
    left = collected - session.config.stash[REPORTED] - fsbench.finished_tests
    # interrupted once every collected test reported (a signal in the last one's teardown, which it
    # let finish: issue 44), the session lacks nothing: it is complete
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED and (bool(left) or COLLECTED not in session.config.stash)
    try:
        problems = fsbench.finish(interrupted=interrupted, tests_left=len(left), failed=session.testsfailed)
    except StoreError as exc:
        problems = [f"the session's end could not be recorded ({exc}): session {fsbench.session_id} stays 'running' "
                    "in the store; once the store can be written again, --resume continues it (a session left "
                    "running by a process that has ended is resumed like an interrupted one)"]
    if exitstatus != pytest.ExitCode.INTERRUPTED:
        problems += fsbench.unapplied_thresholds() + fsbench.ungated()
    warn_inconclusive(fsbench, session)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if fsbench.settings.report is not None:
        problems += write_report(fsbench, reporter)
    if reporter is not None and fsbench.saved:
        reporter.ensure_newline()  # not on the end of the progress line
        for part in progress.fit(f"fsbench: {fsbench.saved}", session.config.stash[COLUMNS]):
            reporter.write_line(part)
    for problem in problems:
        for part in progress.fit(f"fsbench: {problem}", session.config.stash[COLUMNS]):
            if reporter is not None:
                reporter.write_line(part, red=True)
    if problems and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def warn_inconclusive(fsbench: FsbenchSession, session: pytest.Session) -> None:
    """The session's one warning of the inconclusive verdicts that passed, placed at "fsbench" so
    that pytest's summary shows neither a source file nor its line; a filter that makes it an error
    (-W error::...InconclusiveGateWarning) fails the session."""
    judged = [r.judgement for r in tables.latest(fsbench.results)]
    warning = inconclusive_warning(sum(len(j.passed_undecided) for j in judged), sum(len(j.gated) for j in judged))
    if warning is None:
        return
    try:
        warnings.warn_explicit(warning, type(warning), "fsbench", 0)
    except InconclusiveGateWarning:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def write_report(fsbench: FsbenchSession, reporter) -> list[str]:
    """The session's HTML report (--report); what went wrong, as problems of the session."""
    from .views import report  # matplotlib is imported only by a session that writes a report

    if not fsbench.recorded:  # no case was collected: no session was recorded
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"fsbench: no report written to {fsbench.settings.report}: no case ran")
        return []
    settings = fsbench.settings
    baseline = fsbench.baseline
    try:
        data = report.report_data(fsbench.store, fsbench.session_id, baseline.session_ids if baseline else None,
                                  settings.compare, settings.alpha, fsbench.gate.strictest_pct)
        write_whole(settings.report, report.render(data))
    except (OSError, StoreError) as exc:
        return [f"the report {settings.report} could not be written: {exc}"]
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(f"fsbench: report written to {settings.report}")
    return []


def pytest_keyboard_interrupt(excinfo) -> None:
    """One Ctrl-C (or SIGTERM, SIGHUP) stops the session. Its targets are then torn down and the
    session recorded as interrupted, which a second one (pressed again, or a terminal's sent to
    the whole process group) must not cut short: it is ignored until fsbench is done (already
    since the first signal; here also after an interrupt raised otherwise)."""
    interrupts.ignore()
    if interrupts.was_cut_short():  # said when the second signal arrived
        return
    if interrupts.stopped_after_teardown():  # said when the signal arrived; that teardown is done
        sys.stderr.write("fsbench: interrupted once that teardown finished; nothing more is measured\n")
    elif excinfo.type is not pytest.Session.Interrupted:  # stopped by fsbench itself (the store failed): said so
        sys.stderr.write("fsbench: interrupted; tearing the targets down (Ctrl-C again is ignored until done)\n")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is not None:
        try:
            left = session.close()  # the scratch's removal too, which a signal lets finish
        except KeyboardInterrupt:  # a second signal cut it short
            left = ["the session's end was cut short; once this session has ended, fsbench cleanup removes what "
                    "it left"]
        for line in left:
            sys.stderr.write(f"fsbench: {line}\n")
    interrupts.restore(config.stash.get(OLD_HANDLERS, {}))


def pytest_report_header(config: pytest.Config) -> list[str]:
    session = config.stash[SESSION]
    s = session.settings
    where = ", ".join(s.devices) if s.devices else f"loop images of {s.image_size >> 20} MiB in {s.image_dir}"
    runs = (f"{s.repeat.runs}+ runs until the median's 95% CI is within +-{s.repeat.until_ci:g}%"
            if s.repeat.until_ci else f"{s.repeat.runs}+ runs until the gate decides (at most {s.repeat.max_runs})"
            if s.repeat.sequential else f"{s.repeat.runs} runs") + f" after {s.repeat.warmup} warm-up"
    if s.case_precision:
        runs += (f"; {len(s.case_precision)} test(s) until their median's 95% CI is within their own +-% "
                 f"(--until-ci-case, at most {s.repeat.max_runs} runs)")
    lines = [f"fsbench: fs={','.join(s.filesystems)} layouts={','.join(s.layouts)} devices: {where}",
             f"fsbench: {runs}{', interleaved' if s.interleave else ''}; cache={','.join(s.caches)} "
             f"data={','.join(s.datas)}; store {redact(s.store_path)}"]
    if session.baseline is not None:
        sessions = session.baseline.session_ids
        how = (f"{len(sessions)} sessions ({', '.join(map(str, sessions))}): gate on their spread" if len(sessions) > 1
               else f"session {session.baseline.newest}")
        if session.baseline.drift is not None and session.baseline.across_sessions:
            whose = ("the drift between sessions assumed until this machine's history tells"
                     if session.baseline.drift.assumed else "this machine's drift between sessions")
            how = (f"{len(sessions)} session{'s' * (len(sessions) > 1)} ({', '.join(map(str, sessions))}): gate on "
                   f"{whose}")
        elif session.gate.active and len(sessions) == 1:
            how += f", {s.gate_mode} gate" + (f" looking at {', '.join(map(str, s.repeat.looks))} runs"
                                              if s.repeat.sequential else "")
            levels = session.gate.sequential_levels()
            if levels is not None:
                how += (f", each look one-sided at {levels[0]:.3g} so that any look's false alarm is "
                        f"{levels[1] * 100:.2f}% (simulated; --alpha={s.alpha:g})")
        lines.append(f"fsbench: comparing with {s.compare} ({how})")
        lines += [f"fsbench: {line}" for line in session.gate.drift_lines()]
    if s.control:
        matched = session.baseline is None or session.baseline.has_control
        lines.append(f"fsbench: control: a {CONTROL_MB} MiB direct write before every run, so a gate across sessions "
                     "compares each throughput's ratio to it (--control=off to leave it out)"
                     + ("" if matched else "; the baseline has no control runs, so its figures are compared as they "
                        "are"))
    for a, b in s.pairs:
        lines.append(f"fsbench: paired: {b.id} against {a.id}, {s.repeat.runs} interleaved rounds")
    if session.resumed:
        lines.append(f"fsbench: resuming session {session.session_id}; {len(session.finished_tests)} tests already done")
    return [part for line in lines for part in progress.fit(line, config.stash[COLUMNS])]


class SessionEnd:
    """The session's end (its record in the store, its report, pytest's summary), wrapped
    outermost; registered as its own plugin, as the module has its own pytest_sessionfinish."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Iterator[None]:
        """A stop signal meanwhile lets it finish; a second cuts it short in one line, and the
        targets' daemons, scratch and run directory are still released (pytest_unconfigure; issue
        44: a signal there skipped it and left them)."""
        try:
            with interrupts.teardown("the session's end (its record in the store and its report)", deliver=False):
                return (yield)
        except KeyboardInterrupt:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
            fsbench = session.config.stash.get(SESSION, None)
            recorded = fsbench is not None and fsbench.end_cut_short()
            sys.stderr.write("\nfsbench: the session's end was cut short (its report or summary may be missing; "
                             "its runs are in the store" + ("; recorded interrupted, --resume finishes it" if recorded
                                                            else "") + ")\n")
            return None


class Rounds:
    """--interleave: one parametrisation per round; registered as its own plugin so that its
    hook runs last and the round comes last in test ids (test_x[btrfs-raid1-64K-round2])."""

    @pytest.hookimpl(trylast=True)
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        settings = metafunc.config.stash[SESSION].settings
        if settings.interleave and "fsbench_round" in metafunc.fixturenames:
            rounds = range(1, settings.repeat.runs + 1)
            metafunc.parametrize("fsbench_round", list(rounds), ids=[f"round{r}" for r in rounds])


@pytest.hookimpl(trylast=True)  # after the workloads' missing tools have marked their skips
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked fsbench_cases(...) naming a case this session does not have is deselected
    (it could only skip), and with --runnable-only every case that could only skip. Interleaved: every case's round 1, then every case's round 2 in the
    reverse order, and so on (A B, B A, A B ...), so that neither slow drift nor a case's position
    in the round (the first after a build, the last before the next) favours one case."""
    deselect_without_cases(config, items)
    leave_out_unrunnable(config, items)

    def round_of(item: pytest.Item) -> int:
        callspec = getattr(item, "callspec", None)
        return callspec.params.get("fsbench_round", 0) if callspec else 0

    def key(item: pytest.Item) -> tuple[int, int]:
        r, i = round_of(item), position[id(item)]
        return r, (-i if r and r % 2 == 0 else i)

    position = {id(item): i for i, item in enumerate(items)}
    items.sort(key=key)


def leave_out_unrunnable(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--runnable-only: the host's cases that could only skip here are deselected, and one line
    per reason says how many and why."""
    fsbench = config.stash[SESSION]
    if not fsbench.settings.runnable_only:
        return
    left_out: dict[str, list[pytest.Item]] = {}
    for item in items:
        reason = cannot_run(fsbench, item)
        if reason:
            left_out.setdefault(reason, []).append(item)
    if not left_out:
        return
    gone = [item for found in left_out.values() for item in found]
    config.hook.pytest_deselected(items=gone)
    items[:] = [item for item in items if item not in gone]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for line in left_out_lines(left_out):
        for part in progress.fit(line, config.stash[COLUMNS]):
            if reporter is not None:
                reporter.write_line(part)


def cannot_run(fsbench: FsbenchSession, item: pytest.Item) -> str | None:
    """Why a case cannot run on this machine, known before anything is built (None: it can, or
    only a guest's boot would tell)."""
    skip = item.get_closest_marker("skip")
    if skip is not None and is_case(item):
        return str(skip.kwargs.get("reason") or (skip.args[0] if skip.args else "skipped"))
    if not is_case(item):
        return None
    spec = item.callspec.params["fsbench_spec"]
    if spec.in_guest:
        return None
    reasons = fsbench.targets.unavailable(spec)
    return "; ".join(reasons).replace(spec.id, "{case}").replace(f"{spec.fs} {spec.layout}", "{case}") if reasons else None


def left_out_lines(left_out: dict[str, list[pytest.Item]]) -> list[str]:
    lines = []
    for reason, found in left_out.items():
        cases = sorted({item.callspec.params["fsbench_spec"].id for item in found})
        lines.append(f"fsbench: left out {len(found)} test{'s' if len(found) != 1 else ''} this machine cannot run "
                     f"({', '.join(cases)}): {reason.replace('{case}', 'each')}")
    return lines


def check_rules_gate_something(fsbench: FsbenchSession, session: pytest.Session) -> None:
    """A regression rule for a metric no selected test measures is refused before anything is
    built (issue 34: it gated nothing, and the session passed)."""
    measuring = [item for item in session.items if "fsbench" in getattr(item, "fixturenames", ())]
    tests = [(item.path.name if item.path.parent.name == "benchmarks" else "", getattr(item, "originalname", item.name))
             for item in measuring]
    for rule in fsbench.settings.regression_rules:
        if gates_nothing(rule, tests, WORKLOAD_NAMES):
            chosen = ", ".join(dict.fromkeys(function for _, function in tests)) or "none"
            raise pytest.UsageError(f"--fail-on-regression={rule.metric}:{rule.threshold_pct:g}%: no selected test "
                                    f"measures {rule.metric} (selected: {chosen}), so the rule would gate nothing; "
                                    "select a test that measures it, or leave the rule out")
    names = {item.nodeid.rpartition("::")[2] for item in measuring}
    for test, metrics, _ in fsbench.settings.case_precision:
        if test not in names:
            raise pytest.UsageError(f"--until-ci-case={test}: no selected test is {test}, so it would repeat nothing; "
                                    "name a test as pytest --collect-only -q lists it (its name and [id])")
    for threshold in fsbench.settings.thresholds:  # found by the sweep: it failed the session after measuring
        if measuring and gates_nothing(threshold, tests, WORKLOAD_NAMES):
            chosen = ", ".join(dict.fromkeys(function for _, function in tests))
            raise pytest.UsageError(f"--threshold {threshold.text!r}: no selected test measures {threshold.metric} "
                                    f"(selected: {chosen}), so it would check nothing; select a test that measures "
                                    "it, or leave the threshold out")


def deselect_without_cases(config: pytest.Config, items: list[pytest.Item]) -> None:
    ids = {spec.id for spec in config.stash[SESSION].settings.specs}
    unused = [item for item in items
              if any(case not in ids for marker in item.iter_markers("fsbench_cases") for case in marker.args)]
    if unused:
        config.hook.pytest_deselected(items=unused)
        items[:] = [item for item in items if item not in unused]


@pytest.hookimpl(tryfirst=True)  # the case id comes first in test ids: test_x[btrfs-raid1-64K]
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fsbench_spec" in metafunc.fixturenames:
        specs = metafunc.config.stash[SESSION].settings.specs
        metafunc.parametrize("fsbench_spec", specs, ids=[spec.id for spec in specs])
    if "fsbench_conditions" in metafunc.fixturenames:
        conditions = metafunc.config.stash[SESSION].settings.conditions()
        if metafunc.definition.get_closest_marker("fsbench_own_data"):
            conditions = own_data_conditions(conditions)
        if conditions != [Conditions()]:
            metafunc.parametrize("fsbench_conditions", conditions, ids=[c.id for c in conditions])


def own_data_conditions(conditions: list[Conditions]) -> list[Conditions]:
    """The conditions of a test whose tool writes its own data: one per cache policy, the data
    left at the default (the pattern is the tool's, recorded as such by Bench.own_data)."""
    by_cache = {c.cache: dataclasses.replace(c, data=Conditions().data, show_data=False) for c in conditions}
    return list(by_cache.values())


def pytest_collection_finish(session: pytest.Session) -> None:
    """Before anything runs: open and check the result store when there are cases to measure,
    and with real devices print which devices each case will overwrite."""
    fsbench = session.config.stash[SESSION]
    check_rules_gate_something(fsbench, session)
    cases = [item for item in session.items if is_case(item)]
    unmatched = fsbench.gate.unmatched(list(dict.fromkeys(case_key(item.nodeid) for item in cases)),
                                       fsbench.settings.compare)
    if unmatched:
        raise pytest.UsageError(unmatched)
    if cases or any(arg.startswith("--store") for arg in fsbench.settings.args):
        try:  # issue 34: a --store that is no store was accepted when nothing was to be measured
            check_store_place(fsbench.settings.store_path)
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
    if cases:
        try:
            if not session.config.option.collectonly:  # else nothing will be measured: no session recorded
                specs = [item.callspec.params["fsbench_spec"] for item in cases]
                fsbench.targets.check_memory(specs)
                preflight_options(fsbench, specs)
                fsbench.open_store()
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
    session.config.stash[COLLECTED] = True
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if not fsbench.settings.device_infos or reporter is None:
        return
    from .targets.safety import format_plan

    specs = {item.callspec.params["fsbench_spec"] for item in cases}
    infos = fsbench.settings.device_infos
    plan = [(spec.id, list(infos[: spec.devices_needed])) for spec in sorted(specs, key=lambda s: s.id)]
    reporter.write_line("fsbench plan, cases run one after another on these devices:")
    reporter.write_line(format_plan(plan))


def preflight_options(fsbench: FsbenchSession, specs: list[CaseSpec]) -> None:
    """The options only the tools can judge, tried once per filesystem and set of options on a
    scratch target before the store records a session: a rejected one is a UsageError."""
    variants = {b for _, b in fsbench.settings.pairs}
    for spec in preflight.to_try(specs):
        if fsbench.targets.unavailable(spec):
            continue  # skipped with its reason when its turn comes
        failure = fsbench.targets.preflight(spec)
        if failure is not None:
            raise UsageError(preflight.rejected(spec, "--paired" if spec in variants else "--fs-opt", failure))


@pytest.fixture
def fsbench_target(fsbench_spec: CaseSpec, request: pytest.FixtureRequest) -> Iterator[Target]:
    """A freshly built, mounted filesystem for this case; torn down after the test, always."""
    session = request.config.stash[SESSION]
    if case_key(request.node.nodeid) in session.finished_tests:
        pytest.skip(f"{fsbench_spec.id}: finished in session {session.session_id} before it was interrupted")
    reasons = session.targets.unavailable(fsbench_spec)
    if reasons:
        pytest.skip(f"{fsbench_spec.id}: " + "; ".join(reasons))
    start = time.monotonic()
    with contextlib.ExitStack() as stack:
        failure = None
        try:
            target = stack.enter_context(session.target(fsbench_spec))
        except FsbenchError as exc:  # one line naming the tool's words, not a traceback through fsbench
            failure = preflight.build_failure(fsbench_spec.id, exc)
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        built = time.monotonic()
        yield target
        ended = time.monotonic()
    try:
        session.store.add_target_times(session.session_id, case_key(request.node.nodeid), fsbench_spec.id,
                                       built - start, time.monotonic() - ended)
    except StoreError as exc:  # the session stops after this test, in one line
        request.session.shouldstop = session.store_failed(exc)


@pytest.fixture
def fsbench_conditions() -> Conditions:
    """Cache policy and data of the case (parametrised when several are asked for)."""
    return Conditions()


@pytest.fixture
def fsbench_round() -> int:
    """The round of an interleaved session (parametrised with --interleave)."""
    return 0


@pytest.fixture
def fsbench(fsbench_target: Target, fsbench_conditions: Conditions, fsbench_round: int, request: pytest.FixtureRequest,
            record_property) -> Bench:
    """The benchmark helper: `fsbench.measure(workload)` measures on this case's target."""
    session = request.config.stash[SESSION]
    if PROGRESS not in request.config.stash:
        request.config.stash[PROGRESS] = progress.for_pytest(request.config, request.config.stash[COLUMNS])
    bench = Bench(session, fsbench_target, fsbench_conditions, request.node, record_property,
                  interleaved=session.settings.interleave, progress=request.config.stash[PROGRESS],
                  width=request.config.stash[COLUMNS])
    own = request.node.get_closest_marker("fsbench_own_data")
    if own is not None:
        bench.own_data(*own.args)
    return bench


@pytest.fixture
def fsbench_results(request: pytest.FixtureRequest) -> SessionResults:
    """This session's measured samples by case and metric, for ordering assertions."""
    return SessionResults(request.config.stash[SESSION])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Remember which fsbench tests finished: in the store, so --resume can skip them, and here,
    so the session is complete only when every case reported. A store that fails here fails the
    test, never pytest itself."""
    outcome = yield
    report = outcome.get_result()
    if not is_case(item) or report.when == "teardown" or (report.when == "setup" and report.passed):
        return
    key = case_key(item.nodeid)
    item.config.stash[REPORTED].add(key)
    if report.when != "call":
        return
    session = item.config.stash[SESSION]
    # a test the store's failure stopped is not finished: --resume runs it again, and its case (which
    # keeps its runs) makes the ones missing; recorded failed, it was skipped, and the session stayed
    # interrupted for ever (found with issue 44's store removed mid-session)
    stopped = session.store_failure is not None and report.failed
    try:
        session.store.record_test(session.session_id, key, "interrupted" if stopped else report.outcome)
    except StoreError as exc:
        report.outcome = "failed"
        report.longrepr = f"fsbench could not record this test: {exc}"
        item.session.shouldstop = session.store_failed(exc)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is None or not session.results:
        return

    width = config.stash[COLUMNS]

    def write(line: str) -> None:
        for part in progress.fit(line, width):  # every line of prose within the terminal, at most 120 columns (issue 35)
            terminalreporter.write_line(part)

    def write_table(lines: list[str]) -> None:
        for line in lines:  # a row is never wrapped (it would leave its columns); legends fit already
            terminalreporter.write_line(line)

    verdicts = answer.answer_lines(session.answer())
    if verdicts:  # the answer first (issue 43): a line per comparison, before the tables it comes from
        terminalreporter.write_sep("=", "fsbench verdicts, each against its reference")
        for line in verdicts:
            write(line)
    terminalreporter.write_sep("=", "fsbench results (median of measured runs; MB/s = 10^6 bytes/s)")
    write_table(tables.results_table(session.results, width))
    for line in session.targets.guest_notes():
        write(line)
    if session.baseline is not None:
        terminalreporter.write_sep("-", f"fsbench comparison with {session.settings.compare} "
                                        f"(session {', '.join(map(str, session.baseline.session_ids))})")
        write_table(tables.comparison_table(session.results, session.settings.alpha, width,
                                            session.baseline_bases()))
    paired = tables.paired_table(session.results, session.settings.alpha, width)
    if paired:
        terminalreporter.write_sep("-", "fsbench paired comparison: each --paired variant against its case, by round")
        write_table(paired)
    gated = tables.gate_entries(session.results)
    if gated:
        terminalreporter.write_sep("-", f"fsbench gate (--inconclusive={session.settings.on_inconclusive})")
        write_table(tables.gate_section(gated, width, failures_shown=config.option.tbstyle not in ("no", "line")))
    write(tables.time_line({**session.store.time_totals(session.session_id), **session.targets.guest_times()}))
    write(f"store: {session.store.path} (session {session.session_id}); "
          f"fsbench compare {session.session_id} OTHER, fsbench export {session.session_id}")
