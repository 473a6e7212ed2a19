"""The bisect's own parts alone: its request checked before anything is built, its record kept
and read back whole (what --resume continues from), the bisect --resume picks, its plan, the
steps a resumed bisect measures again (none of those recorded), and its page."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest
from lxml import html as lxml_html

from pytest_fsbench.bisect import run
from pytest_fsbench.bisect.build import UML, Layout, prepare
from pytest_fsbench.bisect.looks import RANGE, STEP
from pytest_fsbench.bisect.tree import Commit, check_tree, commits_between
from pytest_fsbench.errors import UsageError
from pytest_fsbench.store.results import Store
from pytest_fsbench.system.commands import execute

COMMITS = [Commit(f"{i:02d}" * 20, f"commit {i}") for i in range(1, 11)]


def asked(tmp_path: Path, **changes) -> run.Asked:
    return dataclasses.replace(run.Asked(tree=tmp_path / "linux", good="base", bad="slowed",
                                         pytest_args=("-k", "dd and write", "--fs=ext4"), work=tmp_path / "work"),
                               **changes)


def record(tmp_path: Path) -> run.Record:
    found = run.Record(asked(tmp_path), "00" * 20, COMMITS[-1].sha, COMMITS)
    found.deciding = [("test_dd_write[ext4-single-1M]", "work.flushes_per_gb", "{}")]
    found.steps = [run.Step(RANGE, COMMITS[-1].sha, "regression", "flushes", 1, 4, measure_seconds=54.0),
                   run.Step(STEP, COMMITS[4].sha, "like good", "flushes 22.35", 2, 4, 18.0, 5.0, 80.0,
                            {"name": "x", "metric": "work.flushes_per_gb", "unit": "/GB",
                             "medians": {"good": 22.35, "step": 22.35, "bad": 976.0}}),
                   run.Step(STEP, COMMITS[7].sha, "like bad", "flushes 976", 3, 4, 12.0, 5.0, 81.0)]
    found.kernels = {COMMITS[4].sha: {"path": "k5", "build_seconds": 18.0, "boot_seconds": 5.0, "error": None},
                     COMMITS[7].sha: {"path": "k8", "build_seconds": 12.0, "boot_seconds": 5.0, "error": None}}
    return found


@pytest.mark.parametrize("given, said", [
    ("--runs=5", "sets --runs"), ("--kernel=uml", "sets --kernel"), ("--store=x.db", "sets --store"),
    ("--fail-on-regression=5%", "sets --fail-on-regression"), ("--compare=base", "sets --compare")])
def test_the_options_a_bisect_sets_itself_are_refused_among_pytests(tmp_path, given, said):
    with pytest.raises(UsageError, match=said):
        run.check_asked(asked(tmp_path, pytest_args=("-k", "dd", given)))


@pytest.mark.parametrize("changes, said", [
    ({"rounds": 1}, "--rounds=1"), ({"rounds": 5, "max_rounds": 4}, "--max-rounds=4"),
    ({"confirm_rounds": 2}, "--confirm-rounds=2"), ({"alpha": 0.5}, "--alpha=0.5"),
    # a session of kernels paired by round reaches p=0.05 in 5 rounds at the least, p=0.01 in 7
    ({"confirm_rounds": 4}, "--confirm-rounds=4: kernels paired by round can never differ significantly at "
                            "--alpha=0.05 in fewer than 5 rounds; give --confirm-rounds=5 or more"),
    ({"rounds": 3, "max_rounds": 4}, "--max-rounds=4"), ({"alpha": 0.01, "confirm_rounds": 6}, "--confirm-rounds=7"),
    ({"rules": ("5", "nonsense")}, "nonsense"),
    # found by issue 44's sweep: each was taken, and said only once both endpoints' kernels were built
    ({"jobs": 0}, "--jobs=0: make needs at least 1 job"), ({"jobs": -2}, "--jobs=-2"),
    ({"rules": ("dd.bogus:5%",)}, "--fail-on-regression=dd.bogus:5%: no workload measures a metric 'dd.bogus'"),
    ({"rules": ("work:5%", "work:7%")}, "--fail-on-regression=work:5% and work:7% are two rules"),
    ({"work": Path("/dev/null")}, "--work-dir=/dev/null: is the null device, not a directory")])
def test_a_bad_request_is_one_line_naming_the_value(tmp_path, changes, said):
    with pytest.raises(UsageError, match=re.escape(said)):
        run.check_asked(asked(tmp_path, **changes))


def test_the_record_reads_back_whole(tmp_path):
    kept = record(tmp_path)
    back = run.Record.from_json(kept.to_json())
    assert back == kept
    assert back.asked.looks == tuple(range(3, 11))
    assert back.verdicts() == {COMMITS[4].sha: "good", COMMITS[7].sha: "bad"}


def test_resume_takes_the_newest_unfinished_bisect_or_the_one_named(tmp_path):
    store = Store(tmp_path / "fsbench.db")
    first = store.start_bisect("host", "t", "g", "b", record(tmp_path).to_json())
    second = store.start_bisect("host", "t", "g", "b", record(tmp_path).to_json())
    store.save_bisect(second, "finished", record(tmp_path).to_json())
    assert run.resumed(store, None, str(tmp_path / "fsbench.db"), execute).bisect_id == first
    assert run.resumed(store, second, str(tmp_path / "fsbench.db"), execute).bisect_id == second
    with pytest.raises(UsageError, match="no bisect 9"):
        run.resumed(store, 9, str(tmp_path / "fsbench.db"), execute)
    store.save_bisect(first, "finished", record(tmp_path).to_json())
    with pytest.raises(UsageError, match="no unfinished bisect"):
        run.resumed(store, None, str(tmp_path / "fsbench.db"), execute)


class Recorded(run.Bisector):
    """A bisect whose steps' verdicts come from a list instead of kernels and sessions: what this test
    checks is which commits a resumed bisect measures, not how a step is measured (the integration
    test measures real ones)."""

    culprit = 6

    def kernel(self, sha):
        return Path("kernel"), None

    def measured(self):
        self.asked_for = getattr(self, "asked_for", [])
        return self.asked_for


def test_a_resumed_bisect_measures_only_the_commits_its_record_has_no_verdict_for(tmp_path, monkeypatch):
    store = Store(tmp_path / "fsbench.db")
    kept = record(tmp_path)
    bisect_id = store.start_bisect("host", "t", "g", "b", kept.to_json())
    again = Recorded(run.Record.from_json(kept.to_json()), store, bisect_id, Layout(tmp_path / "work"), "db", execute,
                     say=lambda line: None)

    def step(b, number, sha):  # the step's verdict as the culprit decides it
        b.measured().append(sha)
        index = [c.sha for c in COMMITS].index(sha) + 1
        return run.Step(STEP, sha, "like bad" if index >= Recorded.culprit else "like good")

    monkeypatch.setattr(run, "measure_step", step)
    run.walk(again)
    assert again.measured() == [COMMITS[6].sha, COMMITS[5].sha]  # 7 then 6: 5 (good) and 8 (bad) were kept
    assert [s.commit for s in again.record.steps][:3] == [s.commit for s in kept.steps]
    assert Store(tmp_path / "fsbench.db").bisect(bisect_id).record["steps"][-1]["commit"] == COMMITS[5].sha


def test_the_plan_says_the_steps_builds_and_measuring_from_this_projects_measurements(tmp_path):
    lines = run.plan_lines(asked(tmp_path), 10, [], work_has_build=False)
    assert lines[0].startswith("fsbench bisect --plan: 10 commits after the good one, so about 4 steps")
    assert "builds: 7 kernels" in lines[1] and "the first full build 13.0 min" in lines[1]
    assert "measured by fsbench's own bisects on a 2-core machine" in lines[1]
    assert "6 sessions" in lines[2]


def test_the_plan_takes_earlier_bisects_times_from_the_store(tmp_path):
    earlier = record(tmp_path).to_json()
    earlier["kernels"]["full"] = {"build_seconds": 300.0, "boot_seconds": 5.0, "full": True}
    lines = run.plan_lines(asked(tmp_path), 64, [earlier], work_has_build=True)
    assert "about 6 steps" in lines[0]
    assert "the median of 1 in this store's bisects" in lines[1]
    assert "first full build" not in lines[1]  # the work directory has its build already
    fresh = run.plan_lines(asked(tmp_path, work=tmp_path / "elsewhere"), 64, [earlier], work_has_build=False)
    assert "the first full build 5.0 min, then about 0.3 min each" in fresh[1]  # 300 s; the rebuilds took 12 and 18 s


def test_a_bisect_that_only_rebuilt_its_kernels_does_not_pass_for_a_full_build(tmp_path):
    rebuilt = record(tmp_path).to_json()  # its kernels took 12 and 18 s, from a build directory already made
    lines = run.plan_lines(asked(tmp_path), 10, [rebuilt], work_has_build=False)
    assert "the first full build 13.0 min" in lines[1]  # fsbench's own measurement, not 18 s


def test_the_plan_of_a_virtual_machines_kernels_says_it_has_no_times_to_give(tmp_path):
    lines = run.plan_lines(asked(tmp_path, kind="vm"), 10, [], work_has_build=False)
    assert lines[1] == "builds: 7 kernels; measuring: 6 sessions (2 or 3 kernels interleaved, 3 to 10 rounds each, " \
        "the confirmation 10)"
    assert "no bisect of vm kernels is in this store" in lines[2] and len(lines) == 3


def test_the_page_shows_the_range_as_a_line_of_commits_with_each_steps_verdict(tmp_path):
    kept = record(tmp_path)
    page = lxml_html.fromstring(run.report_page(kept, 7, "interrupted"))
    boxes = page.xpath("//div[contains(@class, 'commit')]")
    assert len(boxes) == 11  # the good endpoint and the ten commits
    assert "good" in boxes[5].get("class") and "step 1: like good" in boxes[5].text_content()
    assert "work.flushes_per_gb: 22.35 / 22.35 / 976 /GB" in boxes[5].text_content()
    assert "bad" in boxes[8].get("class") and "bad" in boxes[10].get("class")
    assert boxes[6].get("class").strip() == "commit"  # not measured
    rows = page.xpath("//table//tbody/tr")
    assert [r.xpath("td")[4].text_content() for r in rows] == ["regression", "like good", "like bad"]
    assert "not finished: fsbench bisect --resume continues it" in page.text_content()


def tiny_tree(path: Path) -> list[str]:
    """A git tree that passes for a kernel's (a Kbuild at its top) with two commits: the first one's
    Makefile builds a "kernel" (the file linux, whatever the target), the second's does not build."""
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    execute([*git, "init", "-q"])
    (path / "Kbuild").write_text("# the top of a kernel's tree\n")
    made = []
    for makefile, subject in (("%:\n\tprintf 'kernel' > $(O)/linux\n", "builds"),
                              ("$(error this commit does not build)\n", "does not build")):
        (path / "Makefile").write_text(makefile)
        execute([*git, "add", "-A"])
        execute([*git, "commit", "-q", "-m", subject])
        made.append(execute([*git, "rev-parse", "HEAD"]).stdout.strip())
    return made


def test_a_commit_that_does_not_build_is_a_skipped_step_that_says_why_and_is_not_built_again(tmp_path):
    builds, breaks = tiny_tree(tmp_path / "linux")
    kept = run.Record(asked(tmp_path), builds, breaks, [Commit(breaks, "does not build")])
    store = Store(tmp_path / "fsbench.db")
    said: list[str] = []
    b = run.Bisector(kept, store, store.start_bisect("host", "t", builds, breaks, kept.to_json()),
                     Layout(tmp_path / "work"), "db", execute, say=said.append)
    prepare(b.layout, UML, "", execute)
    step = run.measure_step(b, 1, breaks)  # make runs for real and fails: no session is started
    assert (step.kind, step.verdict, step.session) == (STEP, "skip", None)
    assert step.why == "make failed: Makefile:1: *** this commit does not build.  Stop."
    assert "this commit does not build" in (b.layout.kernel_dir(breaks) / "build.log").read_text()
    assert any("does not build" in line for line in said)
    assert kept.verdicts() == {} and run.Record.from_json(store.bisect(b.bisect_id).record).kernels[breaks]["error"]
    kept.steps.append(step)
    assert kept.verdicts() == {breaks: "skip"}
    again = run.Bisector(run.Record.from_json(store.bisect(b.bisect_id).record), store, b.bisect_id, b.layout, "db",
                         execute, say=said.append)
    assert again.kernel(breaks) == (None, step.why)  # a resumed bisect does not build it again
    assert sum("building" in line for line in said) == 1


@pytest.mark.parametrize("make, said", [
    (lambda p: p.write_text("x\n"), "is a file, not a directory"),
    (lambda p: os.mkfifo(p), "is a FIFO (a named pipe), not a directory"),
    (lambda p: p.symlink_to(os.devnull), "is the null device, not a directory"),
    (lambda p: None, "no such directory")])
def test_a_tree_that_is_no_directory_says_what_it_is(tmp_path, make, said):
    """A file or a FIFO given as --tree exists: 'no such directory' sent one looking for it (issue 44's sweep)."""
    where = tmp_path / "linux"
    make(where)
    with pytest.raises(UsageError, match=re.escape(f"--tree={where}: {said}; name a git repository")):
        check_tree(where, execute)


def test_a_work_directory_that_cannot_be_made_is_said_before_the_bisect_is_recorded(tmp_path):
    """Issue 44's sweep: --work-dir under /proc (or a file's path) was an OSError's traceback after
    the bisect had been written into the store."""
    tree = tmp_path / "linux"
    execute(["git", "init", "-q", str(tree)])
    for number, name in enumerate(("Kbuild", "fs.c", "mm.c")):
        (tree / name).write_text(f"{number}\n")
        execute(["git", "-C", str(tree), "add", name])
        execute(["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", name])
    request = asked(tmp_path, good="HEAD~2", bad="HEAD", work=Path("/proc/fsbench-no-such-dir/work"))
    with pytest.raises(UsageError, match=re.escape("--work-dir=/proc/fsbench-no-such-dir/work: No such file or "
                                                   "directory; name a directory the bisect can write")):
        run.new_record(request, execute)
    assert len(run.new_record(dataclasses.replace(request, work=tmp_path / "work"), execute).commits) == 2


@pytest.mark.parametrize("words, said", [
    (("--fs=ext5",), "the cases' pytest arguments (after --): --fs: unknown filesystem 'ext5'"),
    (("--no-such-option",), "the cases' pytest arguments (after --): unrecognized arguments: --no-such-option")])
def test_the_cases_arguments_are_read_by_pytest_before_anything_is_built(tmp_path, words, said):
    """Issue 44's sweep: a bisect took any pytest arguments; the first step's session refused them."""
    with pytest.raises(UsageError, match=re.escape(said)):
        run.check_cases(asked(tmp_path, pytest_args=("-k", "dd", *words)), Path(__file__).resolve().parents[3])


def test_a_good_commit_on_another_branch_is_not_told_to_swap(tmp_path):
    """Issue 44's sweep: a good commit of a side branch was told to swap --good and --bad, which cannot help."""
    tree = tmp_path / "linux"
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    execute(["git", "init", "-q", "-b", "main", str(tree)])
    (tree / "Kbuild").write_text("0\n")
    execute([*git, "add", "Kbuild"])
    execute([*git, "commit", "-q", "-m", "base"])
    execute([*git, "commit", "-q", "--allow-empty", "-m", "main's"])
    execute([*git, "checkout", "-q", "-b", "side", "HEAD~1"])
    execute([*git, "commit", "-q", "--allow-empty", "-m", "side's"])
    sha = {rev: execute([*git, "rev-parse", rev]).stdout.strip() for rev in ("main", "main~1", "side")}
    with pytest.raises(UsageError, match=re.escape(f"(their branches part at {sha['main~1'][:12]}): a bisect walks the "
                                                   f"history that leads to --bad; name a good commit on it")):
        commits_between(tree, sha["side"], sha["main"], execute)
    with pytest.raises(UsageError, match=re.escape(f"--good={sha['main'][:12]} is a descendant of --bad="
                                                   f"{sha['main~1'][:12]}, not an ancestor: ")):
        commits_between(tree, sha["main"], sha["main~1"], execute)


def test_the_page_opens_with_what_the_bisect_found(tmp_path):
    from pytest_fsbench.views.bisect_page import answer

    page = lxml_html.fromstring(run.report_page(record(tmp_path), 7, "interrupted"))
    first = page.xpath("//body/*")[1]
    assert first.get("class") == "answer" and "not finished" in first.text_content()
    found = lxml_html.fromstring(answer(["first bad commit: 7b73f478164b ext4: flush the device", "  confirmed against "
                                         "its parent 062265f7c076 in 10 rounds: ...", "  how sure: ..."]))
    assert [(li.get("class"), li.text_content()[:22]) for li in found.xpath("//li")] == [
        ("worse", "first bad commit: 7b73"), ("worse", "confirmed against its ")]
    assert lxml_html.fromstring(answer(["no regression in the range: a..b", "  why"])).xpath("//li")[0].get(
        "class") == "better"
    assert answer([]) == ""
