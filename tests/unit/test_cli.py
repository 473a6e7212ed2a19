"""The `fsbench` commands a CI job reads: `compare`'s exit status under the gate's rule (or, without
one, on any significantly worse headline metric) and the --json documents of `compare` and
`sessions` (`changes`': in verdicts/test_changes.py), checked against their text on a real SQLite
store filled as the plugin fills it."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from pytest_fsbench import cli
from pytest_fsbench.measure.progress import unwrap
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import Store
from pytest_fsbench.verdicts.baseline import gated_baseline

WRITE = "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]"
READ = "benchmarks/test_dd.py::test_dd_read[ext4-single-1M]"
PARAMS = {"bs": "1M", "size": "128M"}


def add_session(store: Store, token: str, levels: dict[str, float], rng, runs: int = 10,
                save: str | None = None) -> int:
    session = store.start_session(token, {"argv": []}, {"hostname": "ci-1"})
    for test, (metric, level) in levels.items():
        spec = {"fs": "ext4", "id": "ext4-single", "layout": "single", "options": {}}
        row = store.case_row(session, test, "ext4-single", spec, "dd", PARAMS, "drop", "random", {})
        for value in level * np.exp(rng.normal(0.0, 0.03, runs)):  # CV about 3 % between runs
            figure = Metric(metric, float(value), "MB/s", Direction.HIGHER)
            store.add_run(row, False, "t", 1.0, "drop", [figure])
        store.finish_case(row, "done", "runs")
    store.finish_session(session, "complete")
    if save:
        store.save_baseline(save, session)
    return session


@pytest.fixture
def store_path(tmp_path):
    """Session 1 the baseline; session 2 the write 20 % slower, the read 2 % slower; session 3 unchanged."""
    path = tmp_path / "fsbench.db"
    rng = np.random.default_rng(32)
    store = Store(path)
    add_session(store, "base", {WRITE: ("dd.write", 500.0), READ: ("dd.read", 900.0)}, rng)
    add_session(store, "slower", {WRITE: ("dd.write", 400.0), READ: ("dd.read", 882.0)}, rng)
    add_session(store, "same", {WRITE: ("dd.write", 500.0), READ: ("dd.read", 900.0)}, rng)
    store.close()
    return path


def execute(capsys, *args: str) -> tuple[int, str, str]:
    """The command's status, its stdout with each line it wrapped to the terminal joined again (as
    the tests read what a line says), its stderr."""
    status = cli.main(list(args))
    out, err = capsys.readouterr()
    return status, "\n".join(unwrap(out.splitlines())) + "\n" * out.endswith("\n"), err


def table_rows(out: str) -> dict[str, dict[str, str]]:
    """The comparison table's rows by metric: column -> cell, cut at the header's column starts
    (the table pads every column to its width; an empty cell stays empty)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("case "))
    header = lines[start]
    names = header.split()
    starts = [header.index(f" {name} ") + 1 if i else 0 for i, name in enumerate(names[:-1])] + \
        [header.rindex(f" {names[-1]}") + 1]
    rows = {}
    for line in lines[start + 1:]:
        if not line.startswith("test_"):
            break
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None])]
        rows[cells[1]] = dict(zip(names, cells))
    return rows


def test_compare_without_a_rule_fails_on_a_significantly_worse_headline_metric(store_path, capsys):
    status, out, err = execute(capsys, "compare", "1", "2", f"--store={store_path}")
    assert status == 1 and err == ""
    assert table_rows(out)["dd.write"]["verdict"] == "worse"
    assert out.splitlines()[-1].startswith("fsbench compare: ") and out.rstrip().endswith("exit 1")
    status, out, _ = execute(capsys, "compare", "1", "3", f"--store={store_path}")
    assert status == 0 and "worse" not in {row["verdict"] for row in table_rows(out).values()}


def test_compare_with_the_gates_rule_fails_on_a_regression_only(store_path, capsys):
    status, out, _ = execute(capsys, "compare", "1", "2", "--fail-on-regression=dd.write:5%",
                             f"--store={store_path}")
    assert status == 1
    assert [line for line in out.splitlines() if line.startswith("ext4-single regression: dd.write")]
    # the read is 2 % slower (significant or not): under a 5 % rule for every metric it is no regression
    status, out, _ = execute(capsys, "compare", "1", "2", "--fail-on-regression=dd.read:5%",
                             f"--store={store_path}")
    assert status == 0 and "regression: dd.read" not in out
    status, out, _ = execute(capsys, "compare", "1", "2", "--fail-on-regression=30%", f"--store={store_path}")
    assert status == 0 and "0 regressions under --fail-on-regression" in out


def test_a_bad_rule_is_one_line_naming_the_value(store_path, capsys):
    status, out, err = execute(capsys, "compare", "1", "2", "--fail-on-regression=5 percent",
                               f"--store={store_path}")
    assert status == 2 and out == ""
    assert err == ("fsbench compare: --fail-on-regression '5 percent': expected PERCENT or METRIC:PERCENT, "
                   "e.g. 5%, dd.write:3% or work:5% (every count of the work per byte moved)\n")
    status, out, err = execute(capsys, "compare", "1", "2", "--fail-on-regression=dd.wirte:5%",
                               f"--store={store_path}")
    assert status == 2 and len(err.splitlines()) == 1 and "'dd.wirte'" in err and "dd.read, dd.write" in err


@pytest.mark.parametrize("rule", [[], ["--fail-on-regression=dd.write:5%"], ["--fail-on-regression=30%"]])
@pytest.mark.parametrize("new", ["2", "3"])
def test_compare_json_says_what_the_text_says(store_path, capsys, rule, new):
    status, out, _ = execute(capsys, "compare", "1", new, *rule, f"--store={store_path}")
    json_status, document, err = execute(capsys, "compare", "1", new, *rule, "--json",
                                         f"--store={store_path}")
    found = json.loads(document)  # one document, nothing else on stdout
    assert json_status == status == found["exit_status"] and err == ""
    assert found["failed"] == sum(c["failed"] for c in found["comparisons"])
    assert (found["failed"] > 0) == status
    rows = table_rows(out)
    assert {c["metric"] for c in found["comparisons"]} == set(rows)
    for record in found["comparisons"]:
        cells = rows[record["metric"]]
        low, high = record["interval_pct"]
        assert cells["verdict"] == record["verdict"] and cells["p"] == record["p"]
        assert cells["change"].rstrip("* ") == f"{record['change_pct']:+.1f}%"
        assert cells[f"ci{record['level_pct']:g}"] == f"[{low:+.1f}%, {high:+.1f}%]"
        gate_line = [line for line in out.splitlines()
                     if re.match(rf"\S+ [a-z ]+: {record['metric']} ", line)]
        if record["gate"] is None:
            assert gate_line == []
        else:
            assert gate_line[0].startswith(f"ext4-single {record['gate']}: {record['line']}")


def test_compare_names_a_busier_machine_and_fails_nothing_on_it(store_path, capsys):
    """A 20 % slower write whose runs other processes left 5 % of the CPUs (the baseline's left all
    of it: no record counts as quiet) is no regression, with or without a rule (issue 32)."""
    store = Store(store_path)
    session = store.start_session("busy", {"argv": []}, {"hostname": "ci-1"})
    spec = {"fs": "ext4", "id": "ext4-single", "layout": "single", "options": {}}
    row = store.case_row(session, WRITE, "ext4-single", spec, "dd", PARAMS, "drop", "random", {})
    for value in 400.0 * np.exp(np.random.default_rng(4).normal(0.0, 0.03, 10)):
        figure = Metric("dd.write", float(value), "MB/s", Direction.HIGHER)
        others = Metric("cpu.others", 95.0, "%", Direction.LOWER)
        store.add_run(row, False, "t", 1.0, "drop", [figure, others])
    store.finish_case(row, "done", "runs")
    store.finish_session(session, "complete")
    store.close()
    for rule in (["--fail-on-regression=5%"], []):
        status, out, _ = execute(capsys, "compare", "1", "4", *rule, f"--store={store_path}")
        assert status == 0 and "single regression" not in out
        [line] = [line for line in out.splitlines() if line.startswith("ext4-single ")]
        assert line.startswith("ext4-single inconclusive: disturbed: other processes used 95% of the CPUs "
                               "during these runs, and the baseline's runs have no record of it, so the "
                               "change is not judged: dd.write ")
        _, document, _ = execute(capsys, "compare", "1", "4", *rule, "--json", f"--store={store_path}")
        [record] = json.loads(document)["comparisons"]
        assert record["failed"] is False
        assert record["disturbed"].startswith("disturbed: other processes used 95%")
        assert record["gate"] == ("inconclusive" if rule else None)


def test_sessions_json_lists_what_the_table_lists(store_path, capsys):
    status, out, _ = execute(capsys, "sessions", f"--store={store_path}")
    json_status, document, _ = execute(capsys, "sessions", "--json", f"--store={store_path}")
    found = json.loads(document)["sessions"]
    assert status == json_status == 0
    table = [line.split() for line in out.splitlines()[1:] if not line.startswith(" " * 8)]
    assert [[str(s["id"]), s["token"], s["status"], s["host"]] for s in found] == \
        [[row[0], row[1], row[3], row[4]] for row in table]
    assert [s["token"] for s in found] == ["base", "slower", "same"]
    # under each row, what the session ran: read from its cases here (recorded without its request)
    ran = [line.strip() for line in out.splitlines()[1:] if line.startswith(" " * 8)]
    assert ran == ["ext4 x single; tests (the configured test paths); kernel host, 0 tests recorded"] * 3
    assert [(s["ran"]["filesystems"], s["ran"]["layouts"], s["ran"]["measured"]) for s in found] == \
        [(["ext4"], ["single"], ["ext4-single"])] * 3
    assert all(len(line) <= 120 for line in out.splitlines())


def test_an_interrupt_python_wrapped_in_a_runtime_error_is_the_one_line_of_an_interrupt(monkeypatch, capsys):
    """Issue 44's sweep: Ctrl-C during publish's import of matplotlib reached fsbench as 'RuntimeError:
    Error calling __set_name__' (Python wraps what a descriptor's __set_name__ raises) and printed a
    traceback. A mock: the moment of the import a real signal would have to hit is not reproducible."""
    import pytest_fsbench

    def interrupted_import() -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__ on '_axis_method_wrapper' instance") from exc

    monkeypatch.setattr(cli, "main", interrupted_import)
    monkeypatch.setattr("sys.argv", ["fsbench", "publish", "site"])
    assert pytest_fsbench.console_main() == 130
    assert capsys.readouterr().err == ("fsbench publish: interrupted (Ctrl-C); nothing is left half written: run it "
                                       "again to finish\n")


def test_a_runtime_error_that_is_no_interrupt_is_raised_as_it_is(monkeypatch):
    import pytest_fsbench

    def failing() -> int:
        raise RuntimeError("a real bug")

    monkeypatch.setattr(cli, "main", failing)
    monkeypatch.setattr("sys.argv", ["fsbench", "sessions"])
    with pytest.raises(RuntimeError, match="a real bug"):
        pytest_fsbench.console_main()


TEST = "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]"


def gated_session(store: Store, argv: list[str], baseline: list[int] | None) -> int:
    """A session of one case whose manifest keeps the gate's comparisons with baseline (none: ungated)."""
    session = store.start_session(f"tok-{argv}", {"argv": argv}, {"hostname": "h"})
    manifest = {} if baseline is None else {"compared": {"baseline": baseline, "comparisons": []}}
    row = store.case_row(session, TEST, "ext4-single", {"fs": "ext4"}, "dd", {"bs": "1M"}, "drop", "random", manifest)
    store.add_run(row, False, "t", 1.0, "drop", [Metric("dd.write", 100.0, "MB/s", Direction.HIGHER)])
    store.finish_session(session, "complete")
    return session


def test_a_gated_sessions_report_compares_as_its_gate_did_while_the_store_names_those_sessions(tmp_path):
    """Issue 43: `fsbench report N` of a gated session opened with no answer (the gate's verdicts
    only with --compare); without --compare it takes the baseline the gate compared with, but only
    while --compare's name still names those sessions here (a pushed session keeps its first
    store's ids, which may name other sessions in the store it was pushed to)."""
    store = Store(tmp_path / "fsbench.db")
    base = gated_session(store, ["--save=nightly"], None)
    store.save_baseline("nightly", base)
    gated = gated_session(store, ["-k", "write", "--compare=nightly", "--fail-on-regression=5%"], [base])
    by_id = gated_session(store, ["--compare", str(base)], [base])
    ungated = gated_session(store, ["-k", "write"], None)
    elsewhere = gated_session(store, ["--compare=nightly"], [ungated])  # its ids are another store's
    assert gated_baseline(store, gated) == ([base], "nightly")
    assert gated_baseline(store, by_id) == ([base], str(base))
    assert gated_baseline(store, ungated) == ([], None)
    assert gated_baseline(store, elsewhere) == ([], None)
    assert cli.report_baseline(store, gated, None) == ([base], "nightly")
    assert cli.report_baseline(store, gated, str(by_id)) == ([by_id], str(by_id))  # --compare decides when given
