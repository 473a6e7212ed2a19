"""Evidence for `fsbench bisect`: how often it names the wrong commit, by simulation over its own
decision code, and real bisects of a kernel series on this machine. Not a pytest test.

    .venv/bin/python scripts/bisect_evidence.py --fit STORE
    .venv/bin/python scripts/bisect_evidence.py --simulate --fit STORE [--trials 1000] [--jobs 2]
    .venv/bin/python scripts/bisect_evidence.py --real --tree DIR --store STORE --work-dir DIR [--rebuild]
                                                [--slowed 5] [--steady 3]
    .venv/bin/python scripts/bisect_evidence.py --summary STORE

--fit STORE reads every bisect the store holds (their sessions: the range's, each step's, each
confirmation's) and fits the noise of the time figure and of the counts to them: per session, the
log figures as rounds x kernels, the kernels' levels and the rounds' shared offsets taken out (a
two-way layout), the residual's spread per run and the rounds' spread; pooled over the sessions.

--simulate draws bisects of ranges of 8 and 64 commits, the culprit anywhere in the range (the bad
endpoint included), a regression of -5, -10 and -20 % in the throughput (a time figure: dd.write,
rule 5%, paired by round) or the same as a count of the work rising by 1/(1 - x) (flushes per GB,
rule work.flushes_per_gb:5%: the general work:5% allows a count of events +150%), each session's runs drawn round by round from the fitted noise (every kernel of a round
shares its offset). Each trial goes through the bisect's own decision code: the range's check
(verdicts.bisection.check_range, looked at round by round as the session's plugin does: sequentially),
the next commit as search.next_commit chooses it, each step's check_step, the culprit's confirm,
with the shipped defaults (alpha 0.05, looks at rounds 3..10, 10 rounds for the confirmation), and
for the time figure also with --max-rounds=30 --confirm-rounds=30. A
trial ends in one of: the culprit named and confirmed; a wrong commit named and confirmed (the
wrong culprit this evidence is about); a commit named but not confirmed (right or wrong); the
first bad commit left among skipped ones; no regression found in the range; the range undecided.

--real makes fsbench bisect the tree's `slowed` branch (one slowing commit) --slowed times and its
`steady` branch --steady times (scripts/kernel_series.py makes the tree), dd write of 128M on ext4
under UML kernels, --fail-on-regression=work:5%, into STORE, each bisect's output into a file beside
it; --rebuild removes the work directory's kernels before each bisect, so every one builds its kernels
again (from the kept build directory: only what each commit changed).

--summary STORE prints each bisect of the store (its result, sessions and rounds, and its minutes:
builds, boots, measuring, in all) and a step's minutes over all of them.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import shutil
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_fsbench.bisect import search
from pytest_fsbench.bisect.looks import figures
from pytest_fsbench.metrics import Direction, is_count
from pytest_fsbench.store.results import Store
from pytest_fsbench.verdicts.bisection import (
    BAD,
    CONFIRMED,
    GOOD,
    LIKE_BAD,
    LIKE_GOOD,
    NO_REGRESSION,
    REGRESSES,
    STEP,
    Figure,
    check_range,
    check_step,
    confirm,
    sequentially,
)
from pytest_fsbench.verdicts.gate import parse_rule
from pytest_fsbench.verdicts.sequential import round_looks

EFFECTS = (-0.05, -0.10, -0.20)
RANGES = (8, 64)
ALPHA, FIRST, BUDGET = 0.05, 3, 10
TIME_METRIC, COUNT_METRIC = "dd.write", "work.flushes_per_gb"
RULES = {TIME_METRIC: [parse_rule("5%")], COUNT_METRIC: [parse_rule(f"{COUNT_METRIC}:5%")]}
OUTCOMES = ("named, confirmed", "WRONG, confirmed", "named, not confirmed", "wrong, not confirmed", "among skipped",
            "no regression", "range undecided")


# ---- the noise of the real steps ------------------------------------------------------------


@dataclass(frozen=True)
class Noise:
    """Log-scale spreads: of a run about its kernel's level and its round's offset, and of the
    rounds' offsets (shared by every kernel of a round); with the sessions and runs they come from."""

    run_sd: float
    round_sd: float
    sessions: int
    runs: int


def two_way(logs: np.ndarray) -> tuple[float, float, int]:
    """rounds x kernels of one session: (residual sum of squares, its degrees of freedom, and the
    rounds' mean square less the residual's share), as a two-way layout without interaction."""
    rounds, kernels = logs.shape
    grand = logs.mean()
    by_round, by_kernel = logs.mean(axis=1), logs.mean(axis=0)
    residual = logs - by_round[:, None] - by_kernel[None, :] + grand
    ss_res = float((residual ** 2).sum())
    df_res = (rounds - 1) * (kernels - 1)
    ms_round = kernels * float(((by_round - grand) ** 2).sum()) / max(1, rounds - 1)
    return ss_res, df_res, ms_round


def fit(store: Store, metric_of) -> Noise:
    """The noise of one kind of figure (metric_of(name) says whether a metric is of it), pooled over
    every session of every bisect in the store."""
    ss, df, round_ms, sessions, runs = 0.0, 0, [], 0, 0
    for row in store.bisects():
        kind = row.record["asked"]["kind"]
        for step in row.record["steps"]:
            if not step.get("session"):
                continue
            roles = ({f"{kind}-parent": GOOD, f"{kind}-culprit": BAD} if step["kind"] == "confirm"
                     else {f"{kind}-{r}": r for r in (GOOD, BAD, STEP)})
            for figure in figures(store.series(step["session"]), roles):
                if not metric_of(figure.metric) or figure.rounds < 3 or min(min(v) for _, v in figure.runs) <= 0:
                    continue
                logs = np.log(np.array([figure.of(role)[:figure.rounds] for role, _ in figure.runs]).T)
                s, d, m = two_way(logs)
                ss, df, sessions, runs = ss + s, df + d, sessions + 1, runs + logs.size
                round_ms.append((m, logs.shape[1]))
    if df == 0:
        raise SystemExit("no bisect sessions of three or more rounds in the store to fit the noise to")
    run_sd = math.sqrt(ss / df)
    round_var = [max(0.0, m - run_sd ** 2) / k for m, k in round_ms]
    return Noise(run_sd, math.sqrt(float(np.mean(round_var))), sessions, runs)


# ---- one simulated bisect -------------------------------------------------------------------


def session(rng: np.random.Generator, levels: dict[str, float], rounds: int, metric: str, noise: Noise) -> list[Figure]:
    """One session's runs: each role's kernel at its log level, every round's offset shared."""
    offsets = rng.normal(0.0, noise.round_sd, rounds)
    direction = Direction.LOWER if is_count(metric) else Direction.HIGHER
    base = 22.35 if is_count(metric) else 300.0
    runs = tuple((role, tuple(float(base * math.exp(level + o + rng.normal(0.0, noise.run_sd))) for o in offsets))
                 for role, level in levels.items())
    return [Figure("test_dd_write[ext4-single-1M]", metric, "{}", "x", direction, runs)]


def level(index: int, culprit: int, effect: float, metric: str) -> float:
    """A commit's log level: 0 before the culprit, the regression from it on (a count rises)."""
    if index < culprit:
        return 0.0
    return -math.log1p(effect) if is_count(metric) else math.log1p(effect)


def one_bisect(rng: np.random.Generator, commits: int, effect: float, metric: str, noise: Noise,
               budget: int = BUDGET) -> tuple[str, int]:
    """(outcome, sessions' rounds in all) of one bisect of a range of commits (1..commits, the last the
    bad endpoint) whose culprit is drawn uniformly; budget: --max-rounds and --confirm-rounds."""
    culprit = int(rng.integers(1, commits + 1))
    rules, looks = RULES[metric], round_looks(FIRST, budget)
    shas = [str(i) for i in range(1, commits + 1)]
    bad_level = level(commits, culprit, effect, metric)
    ranged = sequentially(lambda f: check_range(f, rules, ALPHA, looks),
                          session(rng, {GOOD: 0.0, BAD: bad_level}, budget, metric, noise), looks)
    spent = ranged.rounds or budget
    if ranged.verdict != REGRESSES:
        return ("no regression" if ranged.verdict == NO_REGRESSION else "range undecided"), spent
    deciding = [f.key for f in ranged.regressed]
    verdicts: dict[str, str] = {}
    while (sha := search.next_commit(shas, verdicts)) is not None:
        levels = {GOOD: 0.0, BAD: bad_level, STEP: level(int(sha), culprit, effect, metric)}
        checked = sequentially(lambda f: check_step(f, deciding, rules, ALPHA, looks),
                               session(rng, levels, budget, metric, noise), looks)
        spent += checked.rounds or budget
        verdicts[sha] = {LIKE_GOOD: search.GOOD, LIKE_BAD: search.BAD}.get(checked.verdict, search.SKIP)
    found = search.standing(shas, verdicts).found
    if found is None:
        return "among skipped", spent
    index = int(found)
    levels = {GOOD: level(index - 1, culprit, effect, metric), BAD: level(index, culprit, effect, metric)}
    confirmed = confirm(session(rng, levels, budget, metric, noise), deciding, rules, ALPHA).verdict == CONFIRMED
    spent += budget
    right = index == culprit
    return {(True, True): "named, confirmed", (False, True): "WRONG, confirmed", (True, False): "named, not confirmed",
            (False, False): "wrong, not confirmed"}[(right, confirmed)], spent


def scenario(job: tuple) -> dict:
    commits, effect, metric, noise, trials, seed, budget = job
    rng = np.random.default_rng(seed)
    counts = {outcome: 0 for outcome in OUTCOMES}
    rounds = 0
    start = time.monotonic()
    for _ in range(trials):
        outcome, spent = one_bisect(rng, commits, effect, metric, noise, budget)
        counts[outcome] += 1
        rounds += spent
    wrong = counts["WRONG, confirmed"]
    return {"figure": metric, "budget": budget, "commits": commits, "effect_pct": effect * 100, "trials": trials, "outcomes": counts,
            "wrong_pct": 100 * wrong / trials, "wrong_ci95": [100 * x for x in wilson(wrong, trials)],
            "found_pct": 100 * counts["named, confirmed"] / trials, "mean_rounds": rounds / trials,
            "seconds": round(time.monotonic() - start, 1)}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


#: the figures and budgets simulated: the time figure at the default budget and at 30 rounds (what a
#: time-only regression takes), the counts at the default
DESIGNS = ((TIME_METRIC, BUDGET), (TIME_METRIC, 30), (COUNT_METRIC, BUDGET))


def simulate(noises: dict[str, Noise], trials: int, jobs: int,
             designs: tuple[tuple[str, int], ...] = DESIGNS) -> list[dict]:
    """Every scenario of the designs (figure, budget) x RANGES x EFFECTS, each on a seed of its own
    (the same scenario draws the same bisects whichever designs run with it)."""
    work = [(commits, effect, metric, noises[metric], trials,
             zlib.crc32(f"{metric}:{budget}:{commits}:{effect}".encode()), budget)
            for metric, budget in designs for commits in RANGES for effect in EFFECTS]
    with multiprocessing.Pool(jobs) as pool:
        return pool.map(scenario, work, chunksize=1)


def design(text: str) -> tuple[str, int]:
    """--design FIGURE:ROUNDS (dd.write:10, work.flushes_per_gb:10, dd.write:30)."""
    metric, _, budget = text.partition(":")
    if metric not in RULES or not budget.isdigit() or int(budget) < FIRST:
        raise argparse.ArgumentTypeError(f"{text}: give FIGURE:ROUNDS, FIGURE one of {', '.join(RULES)} and "
                                         f"ROUNDS at least {FIRST}")
    return metric, int(budget)


def table(rows: list[dict]) -> list[str]:
    lines = ["| figure | rounds at most | commits | regression | bisects | culprit named and confirmed | wrong culprit (95% CI) | "
             "named, not confirmed | among skipped | no regression / undecided | rounds per bisect |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        o = r["outcomes"]
        lo, hi = r["wrong_ci95"]
        lines.append(f"| {r['figure']} | {r['budget']} | {r['commits']} | {r['effect_pct']:+.0f} % | {r['trials']} | "
                     f"{r['found_pct']:.1f} % | {r['wrong_pct']:.1f} % ({lo:.1f}-{hi:.1f}) | "
                     f"{100 * (o['named, not confirmed'] + o['wrong, not confirmed']) / r['trials']:.1f} % | "
                     f"{100 * o['among skipped'] / r['trials']:.1f} % | "
                     f"{100 * (o['no regression'] + o['range undecided']) / r['trials']:.1f} % | {r['mean_rounds']:.0f} |")
    return lines


# ---- real bisects -----------------------------------------------------------------------------


def real(tree: Path, store: Path, slowed: int, steady: int, work: Path, rebuild: bool) -> None:
    """fsbench bisect of the series, each one's output into a file beside the store. rebuild: every
    bisect's kernels removed before it, so each builds all its kernels again from the work
    directory's kept build directory (a step's build then takes what a bisect's own takes)."""
    fsbench = Path(sys.executable).with_name("fsbench")
    for branch, times in (("slowed", slowed), ("steady", steady)):
        for number in range(1, times + 1):
            if rebuild:
                shutil.rmtree(work / "kernels", ignore_errors=True)
            argv = [str(fsbench), "bisect", f"--tree={tree}", "--good=base", f"--bad={branch}",
                    "--fail-on-regression=work:5%", f"--store={store}",
                    f"--report={store.parent / f'bisect-{branch}-{number}.html'}", f"--work-dir={work}",
                    "--", "-k", "dd and write", "--fs=ext4", "--dd-size=128M"]
            out = store.parent / f"bisect-{branch}-{number}.out"
            print(f"== {branch} {number}: {' '.join(argv)} (output: {out})", flush=True)
            start = time.monotonic()
            with open(out, "w") as handle:
                status = subprocess.run(argv, stdout=handle, stderr=subprocess.STDOUT, check=False).returncode
            said = [line for line in out.read_text().splitlines() if line.startswith("fsbench bisect: ")]
            print("\n".join(said[-3:]), flush=True)
            print(f"== {branch} {number}: exit {status} in {(time.monotonic() - start) / 60:.1f} min", flush=True)


def said(result: dict) -> str:
    """A bisect's result in a few words."""
    if result.get("verdict") == "found":
        return f"{result['culprit'][:12]} {result['subject']} ({result['confirmed']})"
    return result.get("verdict", "not finished")


def summary(store: Store) -> list[str]:
    """Each bisect of the store: its range, result, sessions and rounds, and its minutes (builds,
    boots, measuring, in all); then a step's minutes over every bisect (medians)."""
    lines = ["| bisect | bad endpoint | result | sessions (rounds) | builds min | boots min | measuring min | "
             "in all min |", "|---|---|---|---|---|---|---|---|"]
    builds, boots, measuring = [], [], []
    for row in store.bisects():
        record = row.record
        kernels, steps = record["kernels"].values(), record["steps"]
        build = sum(float(k.get("build_seconds") or 0) for k in kernels)
        boot = sum(float(k.get("boot_seconds") or 0) for k in kernels)
        measure = sum(float(s.get("measure_seconds") or 0) for s in steps)
        rounds = "+".join(str(s["rounds"]) for s in steps)
        lines.append(f"| {row.id} | {record['asked']['bad']} | {said(record['result'])} | {len(steps)} ({rounds}) | "
                     f"{build / 60:.1f} | {boot / 60:.1f} | {measure / 60:.1f} | "
                     f"{(build + boot + measure) / 60:.1f} |")
        builds += [float(k["build_seconds"]) for k in kernels
                   if k.get("build_seconds") and not k.get("reused") and not k.get("full")]
        boots += [float(k["boot_seconds"]) for k in kernels if k.get("boot_seconds")]
        measuring += [float(s["measure_seconds"]) for s in steps if s["kind"] == "step" and s.get("measure_seconds")]
    lines.append("")
    lines.append(f"a step's rebuild: median {median(builds):.0f} s of {len(builds)} (range {min(builds, default=0):.0f}-"
                 f"{max(builds, default=0):.0f} s); a boot: median {median(boots):.1f} s of {len(boots)}; a step's "
                 f"measuring: median {median(measuring) / 60:.1f} min of {len(measuring)} (range "
                 f"{min(measuring, default=0) / 60:.1f}-{max(measuring, default=0) / 60:.1f} min)")
    return lines


def median(values: list[float]) -> float:
    return float(np.median(values)) if values else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", type=Path, metavar="STORE", help="fit the noise to the bisects in this store")
    parser.add_argument("--simulate", action="store_true")
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--design", type=design, action="append", metavar="FIGURE:ROUNDS",
                        help="a figure and --max-rounds to simulate (repeatable; default: "
                        + ", ".join(f"{m}:{b}" for m, b in DESIGNS) + ")")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--real", action="store_true")
    parser.add_argument("--tree", type=Path)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--work-dir", type=Path)
    parser.add_argument("--rebuild", action="store_true", help="with --real: each bisect's kernels removed first, "
                        "so it builds them again")
    parser.add_argument("--slowed", type=int, default=5)
    parser.add_argument("--steady", type=int, default=3)
    parser.add_argument("--summary", type=Path, metavar="STORE", help="each bisect of the store and its minutes")
    args = parser.parse_args(argv)
    if args.real:
        if args.tree is None or args.store is None or args.work_dir is None:
            parser.error("--real needs --tree, --store and --work-dir")
        real(args.tree.absolute(), args.store.absolute(), args.slowed, args.steady, args.work_dir.absolute(),
             args.rebuild)
        return 0
    if args.summary is not None:
        print("\n".join(summary(Store(args.summary, create=False))))
        return 0
    if args.fit is None:
        parser.error("give --fit STORE (with --simulate: the noise the simulation draws from)")
    store = Store(args.fit, create=False)
    noises = {TIME_METRIC: fit(store, lambda m: m == TIME_METRIC), COUNT_METRIC: fit(store, is_count)}
    for metric, noise in noises.items():
        print(f"fitted {metric if metric == TIME_METRIC else 'counts of the work'}: a run's log sd {noise.run_sd:.4f}, "
              f"a round's shared offset sd {noise.round_sd:.4f} ({noise.sessions} figure-sessions, {noise.runs} runs)")
    if not args.simulate:
        return 0
    start = time.monotonic()
    rows = simulate(noises, args.trials, args.jobs, tuple(args.design or DESIGNS))
    print("\n".join(table(rows)))
    for row in rows:
        print(json.dumps(row))
    print(f"simulated in {(time.monotonic() - start) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
