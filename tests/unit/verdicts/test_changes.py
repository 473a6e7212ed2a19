"""`fsbench changes` on a real SQLite store filled as the plugin fills it: twelve nightly sessions of
two dd cases with 5 % noise between runs, the write case 20 % slower from session 8 on (where the
kernel and fsbench's commit changed), and fsbench's real change-point detection (ruptures' binary
segmentation, Student's t-test).

The seed is fixed; on 100 seeds the same store gave the change at session 8 alone in all 100 and a
spurious change in none (Apache Otava, before it: 99 and none)."""

from __future__ import annotations

import json
import platform
import re
from pathlib import Path

import numpy as np
import pytest

from pytest_fsbench.verdicts import changes
from pytest_fsbench.views import change_points
from pytest_fsbench import cli
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import SeriesKey, Store

WRITE = "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]"
READ = "benchmarks/test_dd.py::test_dd_read[ext4-single-1M]"
PARAMS = {"bs": "1M", "data": "random", "size": "256M"}
COMMITS = ("06682fd43a78ee4ebb333c250d10777e2ee5df4b", "9c1e2d3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d")


def session_manifest(night: int, host: str) -> dict[str, object]:
    """From the eighth night on, a new kernel and a new fsbench."""
    new = night >= 8
    return {"hostname": host, "kernel": "6.1.0-26-amd64" if new else "6.1.0-25-amd64",
            "fsbench_commit": COMMITS[new], "fsbench": "0.1.0", "cpus": 2}


def add_case(store: Store, session: int, test: str, metric: str, level: float, rng, runs: int = 5) -> None:
    spec = {"fs": "ext4", "id": "ext4-single", "layout": "single", "options": {}}
    manifest = {"applied": {"mount": "/dev/loop2 ext4   rw,relatime"}, "case": spec}
    row = store.case_row(session, test, "ext4-single", spec, "dd", PARAMS, "drop", "random", manifest)
    warmup = Metric(metric, level * 0.7, "MB/s", Direction.HIGHER, PARAMS)
    store.add_run(row, True, "t", 1.0, "drop", [warmup])
    for value in level * np.exp(rng.normal(0.0, 0.05, runs)):  # CV about 5 % between runs
        store.add_run(row, False, "t", 1.0, "drop", [
            Metric(metric, float(value), "MB/s", Direction.HIGHER, PARAMS),
            Metric("cpu.system", 30.0, "%", Direction.LOWER)])  # not a headline metric: no series
    store.finish_case(row, "done", "runs")


def nightly(path: Path | str, nights: int = 12, host: str = "nightly-1", seed: int = 2026, step_at: int = 8,
            level: float = 500.0) -> Path | str:
    """A store (a file, or a PostgreSQL URL) of nights sessions of host: dd write drops 20 % from
    night step_at, dd read stays."""
    rng = np.random.default_rng(seed)
    store = Store(path)
    for night in range(1, nights + 1):
        manifest = session_manifest(night, host)
        session = store.start_session(f"{host}-{night}", {"argv": ["--fs=ext4"]}, manifest)
        add_case(store, session, WRITE, "dd.write", level * (0.8 if night >= step_at else 1.0), rng)
        add_case(store, session, READ, "dd.read", 2.0 * level, rng)
        store.finish_session(session, "complete")
    store.close()
    return path


def execute(capsys, *args: str) -> tuple[int, str, str]:
    """fsbench changes' status and output, each line it wrapped to fit the terminal (issue 43) read
    whole again."""
    status = cli.main(["changes", *args])
    out, err = capsys.readouterr()
    return status, "".join(f"{line}\n" for line in logical(out.splitlines())), err


#: the lines of a change point under its series' line, indented by two
UNDER = ("  session ", "  differs from session ", "  the same as in session ")


def logical(lines: list[str]) -> list[str]:
    """Lines wrapped by fit_under read whole: a line indented deeper than two continues the one
    before; one indented by two does too, unless it is a change point's own line."""
    found: list[str] = []
    for line in lines:
        if found and (line.startswith("    ") or line.startswith("  ") and not line.startswith(UNDER)):
            found[-1] += " " + line.strip()
        else:
            found.append(line)
    return found


def change_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("  session ")]


def test_the_step_is_found_at_session_8_with_what_differed_and_nothing_else(tmp_path, capsys):
    db = nightly(tmp_path / "s.db")
    status, out, err = execute(capsys, f"--store={db}", "--host=nightly-1")
    assert status == 0 and err == ""
    assert "host nightly-1: 12 complete sessions (1-12); 2 series" in out
    [change] = change_lines(out)
    session, started, before, after, pct = re.match(
        r"  session (\d+) \(started (\S+)\): (\S+) -> (\S+) MB/s ([-+][\d.]+)% worse", change).groups()
    assert int(session) == 8
    assert started == Store(db, create=False).sessions()[7].started
    assert float(after) / float(before) - 1 == pytest.approx(-0.20, abs=0.04)
    assert float(pct) == pytest.approx(-20, abs=4)
    assert "the medians of sessions 1-7 and 8-12" in change
    assert ("differs from session 7: kernel 6.1.0-25-amd64 -> 6.1.0-26-amd64; "
            "fsbench commit 06682fd43a78 -> 9c1e2d3f4a5b") in out
    assert ("test_dd_write[ext4-single-1M] dd.write [bs=1M,data=random,size=256M] "
            "(MB/s, higher is better)") in out
    assert "dd.read" not in out  # the flat case: no change point
    assert out.splitlines()[-1] == "fsbench changes: 1 change point in 1 of 2 series"


def test_detect_gives_a_view_the_same(tmp_path):
    store = Store(nightly(tmp_path / "s.db"), create=False)
    [change] = changes.detect(store, "nightly-1")
    assert (change.session.session_id, change.previous.session_id, change.verdict) == (8, 7, "worse")
    assert change.history.key.metric == "dd.write" and change.pvalue < changes.MAX_PVALUE
    assert [name for name, _, _ in change.differences()] == ["kernel", "fsbench commit"]
    assert change.session.options == "none; mounted rw,relatime"  # the same both sides: not a difference


def test_a_figure_marks_the_change_between_sessions_7_and_8(tmp_path, capsys):
    db = nightly(tmp_path / "s.db")
    for name in ("h.svg", "h.png"):
        status, out, _ = execute(capsys, f"--store={db}", "--host=nightly-1", f"--figure={tmp_path / name}")
        assert status == 0 and f"fsbench changes: wrote {tmp_path / name}" in out
        assert (tmp_path / name).stat().st_size > 1000
    assert 'id="change-0-0"' in (tmp_path / "h.svg").read_text()
    fig = change_points.figure(changes.detect(Store(db, create=False), "nightly-1"))
    lines = {line.get_gid(): line for line in fig.axes[0].get_lines()}
    assert list(lines["change-0-0"].get_xdata()) == [6.5, 6.5]  # between the 7th and the 8th session
    assert len(lines["medians-0"].get_xdata()) == 12
    before, after = lines["level-0-0"].get_ydata()[0], lines["level-0-1"].get_ydata()[0]
    assert after / before - 1 == pytest.approx(-0.20, abs=0.04)


def test_other_machines_and_unfinished_sessions_are_not_in_a_series(tmp_path, capsys):
    db = nightly(tmp_path / "s.db")
    store = Store(db)
    rng = np.random.default_rng(1)
    for night in range(6):  # another machine, 20 % slower throughout: no change in either series
        session = store.start_session(f"other-{night}", {}, session_manifest(1, "rack-2"))
        add_case(store, session, WRITE, "dd.write", 400.0, rng)
        store.finish_session(session, "complete")
    crashed = store.start_session("crashed", {}, session_manifest(12, "nightly-1"))
    add_case(store, crashed, READ, "dd.read", 100.0, rng)  # a tenth of the level; the session never ended
    store.close()
    # at 0.001 this seed's flat rack-2 series has no change point (at the default 0.005 it has one:
    # the about 0.5 false ones per 100 unchanged sessions that level costs)
    status, out, _ = execute(capsys, f"--store={db}", "--all-hosts", "--max-pvalue=0.001")
    assert status == 0
    assert ("host nightly-1: 12 complete sessions (1-12); host rack-2: 6 complete sessions (13-18); "
            "3 series") in out
    assert [line.split(" (")[0] for line in change_lines(out)] == ["  session 8"]
    assert "dd.write [bs=1M,data=random,size=256M] on nightly-1" in out
    _, alone, _ = execute(capsys, f"--store={db}", "--host=rack-2", "--max-pvalue=0.001")
    assert alone.splitlines()[-1] == "fsbench changes: no change points in 1 series"


def test_three_sessions_are_too_few(tmp_path, capsys):
    db = nightly(tmp_path / "s.db", nights=3)
    status, out, _ = execute(capsys, f"--store={db}", "--host=nightly-1")
    assert status == 0
    assert out == (f"fsbench changes: host nightly-1: 3 complete sessions in {db}; change points need at "
                   f"least {changes.MIN_SESSIONS}\n")


def test_an_empty_store_says_so(tmp_path, capsys):
    Store(tmp_path / "s.db").close()
    assert execute(capsys, f"--store={tmp_path / 's.db'}", "--all-hosts") == (
        0, f"fsbench changes: no complete sessions in {tmp_path / 's.db'}\n", "")


def test_a_case_added_lately_is_left_out_until_it_has_enough_sessions(tmp_path, capsys):
    db = nightly(tmp_path / "s.db", nights=6)
    store = Store(db)
    session = store.start_session("late", {}, session_manifest(7, "nightly-1"))
    add_case(store, session, WRITE, "dd.write", 500.0, np.random.default_rng(3))
    add_case(store, session, "benchmarks/test_dd.py::test_dd_write[btrfs-single-1M]", "dd.write", 300.0,
             np.random.default_rng(4))
    store.finish_session(session, "complete")
    store.close()
    _, out, _ = execute(capsys, f"--store={db}", "--host=nightly-1")
    assert "host nightly-1: 7 complete sessions (1-7); 2 series;" in out
    assert "fsbench changes: 1 series with fewer than 5 sessions left out" in out


SUFFIX = "name a .svg or .png file (its suffix chooses the format)"
PVALUE = "give a probability above 0 and below 1, e.g. 0.005"


@pytest.mark.parametrize(("args", "message"), [
    (["--host=nope"], "host 'nope': no session of that machine in {db} (hosts here: nightly-1); "
                      "name one with --host, or --all-hosts"),
    (["--host=nightly-1", "--all-hosts"], "--host nightly-1 and --all-hosts: choose one"),
    (["--figure={tmp}/h.pdf"], "--figure {tmp}/h.pdf: " + SUFFIX),
    (["--figure={tmp}/h"], "--figure {tmp}/h: " + SUFFIX),
    (["--figure={tmp}/no/h.svg"], "--figure {tmp}/no/h.svg: the directory {tmp}/no does not exist; "
                                  "make it or name another file"),
    (["--max-pvalue=5%"], "--max-pvalue 5%: " + PVALUE),
    (["--max-pvalue=1"], "--max-pvalue 1: " + PVALUE),
])
def test_usage_errors_are_one_line_naming_the_value(tmp_path, capsys, args, message):
    db = nightly(tmp_path / "s.db", nights=2)
    status, out, err = execute(capsys, f"--store={db}", *(a.format(tmp=tmp_path) for a in args))
    assert (status, out) == (2, "")
    assert err == "fsbench changes: " + message.format(db=db, tmp=tmp_path) + "\n"


def test_a_store_that_does_not_exist_is_named_and_not_made(tmp_path, capsys):
    missing = tmp_path / "none.db"
    status, out, err = execute(capsys, f"--store={missing}", "--host=nightly-1")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and str(missing) in err
    assert not missing.exists()


def test_this_machine_is_the_default_host(tmp_path, capsys):
    db = nightly(tmp_path / "s.db", nights=5, host=platform.node())
    status, out, _ = execute(capsys, f"--store={db}")
    assert status == 0 and f"host {platform.node()}: 5 complete sessions (1-5)" in out


def test_a_teams_postgresql_store_gives_the_same(postgres_server, tmp_path, capsys):
    _, on_file, _ = execute(capsys, f"--store={nightly(tmp_path / 's.db')}", "--host=nightly-1")
    url = nightly(postgres_server.new_database())
    status, on_server, _ = execute(capsys, f"--store={url}", "--host=nightly-1")
    started = re.compile(r"started \S+")
    assert status == 0 and started.sub("", on_server) == started.sub("", on_file)
    assert [line.split(" (")[0] for line in change_lines(on_server)] == ["  session 8"]


def test_the_report_of_a_nightly_session_has_its_history(tmp_path):
    from pytest_fsbench.views import report

    store = Store(nightly(tmp_path / "s.db"), create=False)
    page = report.render(report.report_data(store, 12))
    assert "<h2>History on this machine</h2>" in page and "<figure id='history'>" in page
    assert "session 8 (started " in page and "differs from session 7: kernel" in page
    assert "History on this machine" not in report.render(report.report_data(store, 3))  # before the step
    store.close()


def test_changes_json_marks_the_change_the_text_marks(tmp_path, capsys):
    db = nightly(tmp_path / "s.db")
    status, out, _ = execute(capsys, f"--store={db}", "--host=nightly-1")
    json_status, document, _ = execute(capsys, f"--store={db}", "--host=nightly-1", "--json")
    found = json.loads(document)
    assert status == json_status == 0
    [change] = found["changes"]
    assert change["session"] == 8 and change["verdict"] == "worse" and change["metric"] == "dd.write"
    [line] = [line for line in out.splitlines() if line.startswith("  session ")]
    assert line.startswith(f"  session 8 (started {change['started']}): {change['before']:.4g} -> "
                           f"{change['after']:.4g} MB/s {change['change_pct']:+.1f}% worse")
    assert {d["what"] for d in change["differences"]} == {"kernel", "fsbench commit"}
    assert found["hosts"] == {"nightly-1": list(range(1, 13))} and len(found["series"]) == 2


def series_of(medians: list[float]) -> changes.History:
    points = tuple(changes.Point(i + 1, f"2026-11-0{i + 1}", m, "6.1.0-25-amd64", "none", "c") for i, m in
                   enumerate(medians))
    key = SeriesKey(WRITE, "dd", "{}", "dd.write", "{}")
    return changes.History("h", key, "MB/s", Direction.HIGHER, points)


#: six sessions' dd write medians (MB/s), the last three about 25 % slower; Apache Otava 0.8 gave
#: this split p = 0.0012 (so missed it at its default 0.001), as it did the issue's real sessions
STEP_25 = [701.5, 749.7, 783.1, 538.8, 586.3, 554.7]


def test_a_25_percent_step_in_the_last_3_of_6_sessions():
    """Issue 32: fsbench's t-test on the log medians (pooled variance, n - 1) gives p = 0.0021: missed
    at 0.001, as Otava missed it at its default, and found at session 4 alone at the default 0.005
    (chosen on real sessions: about 0.5 false change points per 100 unchanged ones)."""
    assert changes.MAX_PVALUE == 0.005
    assert changes.change_points(series_of(STEP_25), 0.001) == []
    [change] = changes.change_points(series_of(STEP_25))
    assert change.session.session_id == 4 and change.pvalue == pytest.approx(0.00215, abs=5e-5)
    assert change.change_pct == pytest.approx(-26.0, abs=0.1) and change.verdict == "worse"


def test_a_51_percent_step_is_found_at_the_default():
    halved = STEP_25[:3] + [round(m * 0.49 / 0.75, 1) for m in STEP_25[3:]]
    [change] = changes.change_points(series_of(halved))
    assert change.session.session_id == 4 and change.pvalue < 1e-4
    assert change.change_pct == pytest.approx(-51.7, abs=0.1)  # of the medians 749.7 and 362.4


def test_flat_and_level_series_have_no_change_point():
    assert changes.change_points(series_of([500.0] * 8)) == []
    assert changes.change_points(series_of([500.0, 510.0, 495.0, 505.0, 498.0, 502.0])) == []
    assert changes.change_points(series_of([500.0, 500.0, 500.0, 250.0, 250.0, 250.0]))[0].pvalue < 1e-12


def test_the_t_test_is_students():
    """Against scipy.stats' own two-sided t-test with pooled variance."""
    from scipy.stats import ttest_ind

    left, right = [6.1, 6.3, 6.2, 6.25], [5.9, 6.0, 5.8]
    assert changes.t_test(left, right) == pytest.approx(ttest_ind(left, right).pvalue, rel=1e-9)


def test_the_default_install_has_no_otava_nor_its_cloud_clients():
    """Issue 32: Otava 0.8 pinned numpy 2.2.0 and pulled google-cloud-bigquery, slack_sdk and grpcio;
    ruptures, whose binary segmentation fsbench's matches, is only the tests' reference."""
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!~\[ ;]", d)[0].lower() for d in project["dependencies"]]
    assert "ruptures" not in names and any(d.startswith("ruptures") for d in project["optional-dependencies"]["test"])
    assert not {"apache-otava", "google-cloud-bigquery", "slack-sdk", "grpcio"} & set(names)
    assert not [d for d in project["dependencies"] if d.startswith("numpy") and "==" in d]


def ruptures_splits(logs: list[float]) -> list[int]:
    """ruptures' own binary segmentation (l2 cost), as changes.candidates asks it of its prefix sums."""
    ruptures = pytest.importorskip("ruptures")
    most = min(len(logs) // changes.MIN_SEGMENT - 1, changes.MAX_CANDIDATES)
    if most < 1:
        return []
    fitted = ruptures.Binseg(model="l2", min_size=changes.MIN_SEGMENT, jump=1).fit(np.asarray(logs).reshape(-1, 1))
    return sorted(fitted.predict(n_bkps=most)[:-1])


def test_the_candidate_splits_are_ruptures_binary_segmentations():
    """1,000 series of 2-400 sessions, flat or with a step (numpy's prefix sums, and Python's for a
    short level, against ruptures' Binseg): the same splits, in the same order of choosing."""
    rng = np.random.default_rng(43)
    for trial in range(1000):
        n = int(rng.integers(2, 400)) if trial % 4 else int(rng.integers(2, 40))
        logs = rng.normal(6.0, 0.05, n)
        if trial % 2:
            logs[n // 3:] += 0.2
        assert changes.candidates([float(x) for x in logs]) == ruptures_splits([float(x) for x in logs]), n


def test_a_count_that_never_moved_has_no_change_point():
    """Medians all alike (a count of the work, on a log scale 1.8245...): each level's mean, rounded,
    was a little off each of its values, and the t-test found steps of that rounding alone."""
    assert changes.level_changes([6.2] * 365) == []
    assert changes.level_changes([6.2] * 40 + [7.3] * 40, count=True)[0][:3] == (40, 0, 80)
    assert changes.level_of([6.2] * 3) == (3, 6.2, 0.0)


def test_a_year_of_nightly_medians_is_analysed_in_milliseconds():
    """365 sessions: the time of 20 series, a generous bound on any machine (binary segmentation
    by ruptures took 200 ms and more for one)."""
    import time

    rng = np.random.default_rng(1)
    series = [list(500 * np.exp(rng.normal(0, 0.05, 365))) for _ in range(20)]
    start = time.process_time()
    for medians in series:
        changes.level_changes(medians)
    assert time.process_time() - start < 2.0
