"""Evidence for gating on the work a filesystem did (issue 41): real pytest sessions of the plugin,
dd write of 128M on ext4, XFS, Btrfs and ZFS (zfs-fuse: devices only, no commit count), each under
a load, gated on the counts of the work with --fail-on-regression=work:5% (and on the speed, 5%).
Not a pytest test; root; about 6 minutes a cycle on a 2-core machine.

    .venv/bin/python scripts/work_evidence.py --real DIR [--cycles 8]
    .venv/bin/python scripts/work_evidence.py --table DIR

--real DIR: cycles of sessions in a store of their own (DIR/work.db; DIR/sessions.jsonl says which
session was which arm). Each cycle saves two baselines (--save alone: the gate's budget of runs),
every filesystem with random data and Btrfs with 50 % compressible data, on a quiet machine in odd
cycles and beside two CPU burners in even ones; then every arm once, in a shuffled order, each ONE
session of 3 runs against the cycle's baseline, beside two CPU burners or an I/O hog (a direct
writer on the disk under the images), the load alternating with the cycle:

- unchanged (every filesystem): the counts' spread across sessions, and how often the gate on
  them fails an unchanged case (goal: never);
- changes that add work, each caught in one session (goal: every time): ext4 data=journal (device
  bytes x2), mount=sync on ext4, XFS and Btrfs (flushes and commits), ext4 without its journal
  (commits down: better), Btrfs compress=zstd on compressible data (device bytes down: better, and
  five times the write requests per MB: compressed extents are written in small pieces);
- a change that slows the run without adding device work (ext4 nodelalloc): the counts stay within
  bounds, they do not pretend to see what they cannot.

--table DIR: the tables of docs/gate.md from the sessions kept: each arm's verdicts on its counts as
the session's own gate gave them (against its cycle's baseline), the same sessions against the
first cycle's baseline (saved hours before, on a quiet or a busy machine: across sessions, with no
drift to estimate), the unchanged counts' spread, and what counting cost (the syncfs and the
counters read after each run, against the run's whole time in fsbench).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate_evidence import CPU, IO, start_load, stop_load  # noqa: E402
from pytest_fsbench.metrics import WORK_PER_BYTE  # noqa: E402
from pytest_fsbench.store.results import Store  # noqa: E402
from pytest_fsbench.verdicts import gate  # noqa: E402
from pytest_fsbench.verdicts.baseline import compare_pairs, disturbances  # noqa: E402
from pytest_fsbench.verdicts.disturbance import busier_baseline  # noqa: E402
from pytest_fsbench.verdicts.stats import DEFAULT_ALPHA  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
COMMON = ("benchmarks/test_dd.py", "-k", "write", "--layout=single", "--dd-size=128M", "-p", "no:cacheprovider",
          "-q")
FILESYSTEMS = "--fs=ext4,xfs,btrfs,zfs"
RULES = ("--fail-on-regression=work:5%", "--fail-on-regression=5%")
DATA50 = ("--fs=btrfs", "--data=50%")


@dataclass(frozen=True)
class Arm:
    """One arm: its pytest options, the baseline it compares with, and the counts it should move
    (metric -> "regression" or "better", on the named filesystems); an arm that adds no work
    (unchanged, or slower for another reason) must show no count regressed."""

    name: str
    options: tuple[str, ...]
    baseline: str = "base"  # or "base50" (Btrfs, 50 % compressible data)
    expected: tuple[tuple[str, str, str], ...] = ()  # (fs, metric, verdict)

    @property
    def adds_no_work(self) -> bool:
        return not self.expected


ARMS = (
    Arm("unchanged", (FILESYSTEMS,)),
    Arm("ext4 data=journal", ("--fs=ext4", "--fs-opt=ext4:mount=data=journal"),
        expected=(("ext4", "work.write_amp", "regression"),)),
    Arm("mount=sync", ("--fs=ext4,xfs,btrfs", "--fs-opt=ext4:mount=sync", "--fs-opt=xfs:mount=sync",
                       "--fs-opt=btrfs:mount=sync"),
        expected=tuple((fs, "work.flushes_per_gb", "regression") for fs in ("ext4", "xfs", "btrfs"))),
    Arm("ext4 without a journal", ("--fs=ext4", "--fs-opt=ext4:mkfs=-O ^has_journal"),
        expected=(("ext4", "work.commits_per_gb", "better"),)),
    Arm("btrfs compress=zstd", (*DATA50, "--fs-opt=btrfs:compress=zstd"), "base50",
        expected=(("btrfs", "work.write_amp", "better"), ("btrfs", "work.requests_per_mb", "regression"))),
    Arm("ext4 nodelalloc (slower, no more work)", ("--fs=ext4", "--fs-opt=ext4:mount=nodelalloc")),
)
BASELINES = {"base": (FILESYSTEMS,), "base50": DATA50}


def pytest_argv(where: Path, *options: str) -> list[str]:
    return [str(Path(sys.executable).with_name("pytest")), *COMMON, *options, f"--store={where / 'work.db'}",
            f"--image-dir={where / 'images'}"]


def run(where: Path, options: list[str], load: str | None) -> dict:
    """One pytest session beside a load; an interruption is passed on to the session as SIGTERM, and
    waited for, so it tears its target down (a killed one would leave it for fsbench cleanup)."""
    pids = start_load(load, where)
    start = time.monotonic()
    session = subprocess.Popen(pytest_argv(where, *options), cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = session.communicate(timeout=1800)
    except BaseException:
        session.terminate()
        session.wait(timeout=300)
        raise
    finally:
        stop_load(pids, load, where)
    found = re.search(r"^store: .* \(session (\d+)\)", output, re.MULTILINE)
    return {"session": int(found.group(1)) if found else None, "exit": session.returncode,
            "seconds": round(time.monotonic() - start, 1), "utc": time.strftime("%H:%M:%S", time.gmtime()),
            "tail": output.splitlines()[-3:] if session.returncode not in (0, 1) else []}


def real_sessions(args: argparse.Namespace) -> int:
    where = Path(args.real)
    (where / "images").mkdir(parents=True, exist_ok=True)
    rng = random.Random(41 + args.first_cycle)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    with open(where / "sessions.jsonl", "a") as log:
        def note(record: dict) -> None:
            log.write(json.dumps(record) + "\n")
            log.flush()
            print(f"cycle {record['cycle']} {record['arm']} ({record['load'] or 'quiet'}): session "
                  f"{record['session']} exit {record['exit']} {record['seconds']} s", flush=True)

        for cycle in range(args.first_cycle, args.cycles + 1):
            busy = CPU if cycle % 2 == 0 else None
            for name, options in BASELINES.items():
                note({"cycle": cycle, "arm": name, "load": busy,
                      **run(where, [*options, f"--save={name}-{cycle}"], busy)})
            load = CPU if cycle % 2 else IO
            for arm in rng.sample(ARMS, len(ARMS)):
                note({"cycle": cycle, "arm": arm.name, "load": load,
                      **run(where, [*arm.options, "--runs=3", f"--compare={arm.baseline}-{cycle}", *RULES], load)})
    return 0


# ---- the tables ---------------------------------------------------------------------------------


def records(where: Path) -> list[dict]:
    return [json.loads(line) for line in (where / "sessions.jsonl").read_text().splitlines() if line.strip()]


def fs_of(case_id: str) -> str:
    return case_id.split("-")[0]


def verdicts(store: Store, base_ids: list[int], new_id: int) -> dict[tuple[str, str], tuple[str, str]]:
    """(fs, metric) -> (the gate's verdict under work:5% / 5%, the comparison's word) of a session's
    cases against baseline sessions, as fsbench compare judges them."""
    pairs = compare_pairs(store, base_ids, new_id, DEFAULT_ALPHA)
    rules = [gate.parse_rule("work:5%"), gate.parse_rule("5%")]
    keys = [s.key for _, s, _ in pairs]
    found = gate.outcomes(pairs, rules, disturbances(store, base_ids, new_id, keys),
                          disturbances(store, base_ids, new_id, keys, rule=busier_baseline))
    return {(fs_of(o.series.case_id), o.series.key.metric):
            (o.gate or "", "disturbed" if o.disturbed and not o.series.key.metric.startswith("work.")
             else o.comparison.verdict) for o in found}


def session_gate(store: Store, session_id: int) -> dict[tuple[str, str], str]:
    """(fs, metric) -> the session's own gate verdict, from its cases' manifests."""
    found = {}
    for case in store.session_export(session_id)["cases"]:
        for entry in case["manifest"].get("gate", []):
            head = entry["line"].split(": ", 2)
            metric = head[1].split()[0] if len(head) > 1 else ""
            verdict = next((v for v in (gate.REGRESSION, gate.WITHIN, gate.INCONCLUSIVE) if head[0].endswith(v)), "")
            if verdict == gate.INCONCLUSIVE and "disturbed" in entry["line"]:
                metric = next((w for w in entry["line"].split() if w.startswith("dd.")), metric)
            found[(fs_of(case["case_id"]), metric)] = verdict
    return found


def caught(arm: Arm, judged: dict[tuple[str, str], tuple[str, str]]) -> tuple[bool, list[str]]:
    """Whether the counts said what the arm should make them say: its expected verdicts, and no
    count regressed beyond them; the words that were wrong."""
    wrong = []
    expected = {(fs, metric): verdict for fs, metric, verdict in arm.expected}
    for (fs, metric), (rule_verdict, word) in judged.items():
        if metric not in WORK_PER_BYTE:
            continue
        want = expected.get((fs, metric))
        if want == "regression" and rule_verdict != gate.REGRESSION:
            wrong.append(f"{fs} {metric} {rule_verdict}")
        elif want == "better" and word != "better":
            wrong.append(f"{fs} {metric} {word}")
        elif want is None and arm.adds_no_work and rule_verdict == gate.REGRESSION:
            wrong.append(f"{fs} {metric} regression")
    missing = [f"{fs} {metric} not compared" for (fs, metric) in expected if (fs, metric) not in judged]
    return not wrong and not missing, wrong + missing


def time_word(judged: dict[tuple[str, str], tuple[str, str]]) -> str:
    """What the gate on the speed said, every case of the session counted."""
    words = [rule + (" (disturbed)" if word == "disturbed" else "") for (fs, metric), (rule, word) in judged.items()
             if metric == "dd.write"]
    return ", ".join(f"{words.count(w)} {w}" for w in sorted(set(words)))


def spread(store: Store, sessions: list[int]) -> dict[tuple[str, str], float]:
    """(fs, metric) -> the sd of the unchanged sessions' medians, in % of their mean."""
    medians: dict[tuple[str, str], list[float]] = {}
    for session_id in sessions:
        for s in store.series(session_id):
            if s.key.metric in WORK_PER_BYTE and s.values:
                medians.setdefault((fs_of(s.case_id), s.key.metric), []).append(statistics.median(s.values))
    return {key: (statistics.stdev(v) / statistics.fmean(v) * 100 if statistics.fmean(v) else 0.0)
            for key, v in medians.items() if len(v) > 1}


def cost(store: Store, sessions: list[int]) -> tuple[float, float, int]:
    """Counting's seconds per run, as a share of the run's whole time in fsbench: median and largest, runs."""
    shares = []
    for session_id in sessions:
        rows = store.db.execute(
            "SELECT r.count_seconds, r.wall_seconds FROM runs r JOIN cases c ON r.case_row = c.id "
            "WHERE c.session_id = ? AND r.count_seconds IS NOT NULL AND r.wall_seconds > 0", (session_id,)).fetchall()
        shares += [count / wall for count, wall in rows]
    return statistics.median(shares) * 100, max(shares) * 100, len(shares)


def table(args: argparse.Namespace) -> int:
    where = Path(args.table)
    kept = records(where)
    store = Store(where / "work.db", create=False)
    def load(session_id: int, metric: str) -> float:
        return statistics.median(v for s in store.series(session_id) if s.key.metric == metric for v in s.values)

    others = {r["session"]: (load(r["session"], "cpu.others"), load(r["session"], "disk.others"))
              for r in kept if r["session"]}
    first = {r["arm"]: r["session"] for r in kept if r["cycle"] == min(x["cycle"] for x in kept) and r["arm"] in BASELINES}
    by_cycle = {(r["cycle"], r["arm"]): r for r in kept}
    print("| arm | load | sessions | the gate on the counts: as expected (own baseline) | as expected (first "
          "cycle's baseline) | the speed's gate (own baseline) | others' CPU %, disk MB/s (medians) |")
    print("|---|---|---|---|---|---|---|")
    for arm in ARMS:
        for load in (CPU, IO):
            mine = [r for r in kept if r["arm"] == arm.name and r["load"] == load and r["session"]]
            if not mine:
                continue
            own, old, words, wrong = 0, 0, [], []
            for r in mine:
                base = by_cycle[(r["cycle"], arm.baseline)]["session"]
                judged = verdicts(store, [base], r["session"])
                ok, why = caught(arm, judged)
                own += ok
                wrong += [f"cycle {r['cycle']}: {w}" for w in why]
                old += caught(arm, verdicts(store, [first[arm.baseline]], r["session"]))[0]
                words.append(time_word(judged))
            print(f"| {arm.name} | {load} | {len(mine)} | {own} of {len(mine)} | {old} of {len(mine)} | "
                  f"{'; '.join(sorted(set(words)))} | {statistics.median(others[r['session']][0] for r in mine):.0f}, "
                  f"{statistics.median(others[r['session']][1] for r in mine):.0f} |")
            for line in wrong:
                print(f"|  | | | {line} | | | |")
    unchanged = [r["session"] for r in kept if r["arm"] in ("unchanged", "base") and r["session"]]
    print("\nThe counts' spread across unchanged sessions (sd of the session medians, % of their mean; "
          f"{len(unchanged)} sessions: the baselines and the unchanged arm):\n")
    print("| filesystem | " + " | ".join(WORK_PER_BYTE) + " |")
    print("|---|" + "---|" * len(WORK_PER_BYTE))
    found = spread(store, unchanged)
    for fs in ("ext4", "xfs", "btrfs", "zfs"):
        cells = [f"{found[(fs, m)]:.2f}" if (fs, m) in found else "" for m in WORK_PER_BYTE]
        print(f"| {fs} | " + " | ".join(cells) + " |")
    median, largest, runs = cost(store, [r["session"] for r in kept if r["session"]])
    print(f"\nCounting (the syncfs and the counters read after each run) took {median:.2f} % of a run's whole "
          f"time in fsbench (median of {runs} runs; largest {largest:.1f} %).")
    return 0


# ---- what counting adds (--cost) ---------------------------------------------------------------


def cost_of_counting(where: Path, rounds: int = 20) -> int:
    """What counting adds to a run, on ext4, XFS and Btrfs on direct-I/O loop images: dd of 128 MiB
    with fdatasync, then the next run's cache policy (sync, drop_caches), with and without the
    counting between them (a syncfs of the target and its counters read), rounds alternating. The
    syncfs writes what the next sync would have written: the added time is the difference of the two
    totals, not the syncfs's own time."""
    import os
    from pytest_fsbench.measure import work
    source = where / "cost-source"
    subprocess.run(["dd", "if=/dev/urandom", f"of={source}", "bs=1M", "count=128", "status=none"], check=True)
    print("| filesystem | run + cache policy, without counting (ms, median) | with counting | added | added, % "
          "| syncfs alone (ms) | counters read (ms) |")
    print("|---|---|---|---|---|---|---|")
    for fs, mkfs in (("ext4", ["mkfs.ext4", "-F", "-q"]), ("xfs", ["mkfs.xfs", "-f", "-q"]),
                     ("btrfs", ["mkfs.btrfs", "-f", "-q"])):
        image, mountpoint = where / f"cost-{fs}.img", where / f"cost-{fs}"
        subprocess.run(["truncate", "-s", "2G", str(image)], check=True)
        loop = subprocess.run(["losetup", "--direct-io=on", "-f", "--show", str(image)], capture_output=True,
                              text=True, check=True).stdout.strip()
        mountpoint.mkdir(exist_ok=True)
        times: dict[bool, list[float]] = {False: [], True: []}
        syncs, reads = [], []
        try:
            subprocess.run([*mkfs, loop], check=True)
            subprocess.run(["mount", loop, str(mountpoint)], check=True)
            place = work.place_of([loop], {"ext4": "jbd2", "xfs": "xfs-log", "btrfs": "btrfs"}[fs], str(mountpoint))
            for k in range(2 * rounds):
                counting = k % 2 == 1
                start = time.monotonic()
                subprocess.run(["dd", f"if={source}", f"of={mountpoint}/f", "bs=1M", "conv=fdatasync", "status=none"],
                               check=True)
                if counting:
                    t = time.monotonic()
                    work.syncfs(str(mountpoint))
                    syncs.append(time.monotonic() - t)
                    t = time.monotonic()
                    work.read_counters(place)
                    reads.append(time.monotonic() - t)
                subprocess.run(["sync"], check=True)
                Path("/proc/sys/vm/drop_caches").write_text("3\n")
                times[counting].append(time.monotonic() - start)
        finally:
            subprocess.run(["umount", str(mountpoint)])
            subprocess.run(["losetup", "-d", loop])
            image.unlink(missing_ok=True)
        without, with_ = (statistics.median(times[c]) * 1000 for c in (False, True))
        print(f"| {fs} | {without:.1f} | {with_:.1f} | {with_ - without:+.1f} | {(with_ - without) / without * 100:+.1f} "
              f"| {statistics.median(syncs) * 1000:.2f} | {statistics.median(reads) * 1000:.3f} |")
    os.unlink(source)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--real", metavar="DIR", help="run the cycles of real sessions, kept in DIR (root)")
    mode.add_argument("--table", metavar="DIR", help="the tables of the sessions kept in DIR")
    mode.add_argument("--cost", metavar="DIR", help="what counting adds to a run, on loop images in DIR (root)")
    parser.add_argument("--cycles", type=int, default=8)
    parser.add_argument("--first-cycle", type=int, default=1, help="--real: the number of its first cycle (to go on)")
    args = parser.parse_args()
    if args.cost:
        return cost_of_counting(Path(args.cost))
    return real_sessions(args) if args.real else table(args)


if __name__ == "__main__":
    sys.exit(main())
