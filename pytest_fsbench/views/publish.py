"""`fsbench publish DIR`: the store's history as a static site a team watches its nightly fleet
on (site.py draws its pages, history.py sums its sessions up and finds its change points).

Re-published incrementally. What changed is found from the store's sessions against the site's
own record, DIR/data/publish.json (and the figures it keeps, DIR/data/points.npz):
- a complete session is read from the store (its cases' summaries) only when it is new to the
  site, or its token or end differ from what the site recorded (a resumed session); a session no
  longer complete or no longer in the store leaves the site;
- change points are found again only in a track (a figure of a case on a host) whose points
  changed (a digest of them);
- a page is rebuilt only when what it shows changed (a digest of its tracks and the reports it
  links), and written only when its text differs from what was written (a digest of it); a page
  of a case or host no longer in the store is removed;
- a report (views/report.py, as `fsbench report ID` writes it) is written once, for the sessions
  --reports chooses; a session links to its report where DIR/reports holds one.
Finding change points and building pages run in as many processes as there are CPUs when there
are many.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..options import check_replaceable, directory_for_files
from ..store.results import DIRECTIONS, SeriesKey, SessionRow, Store
from ..verdicts import changes
from ..verdicts.baseline import gated_baseline
from ..verdicts.gate import REGRESSION
from . import history, site

#: the site's record of itself: the sessions it holds, how each page and track was made
STATE = Path("data") / "publish.json"
#: the figures it holds, a row per session and figure (COLUMNS)
POINTS = Path("data") / "points.npz"
COLUMNS = {"track": np.int32, "session": np.int64, "runs": np.int32, "median": np.float64, "low": np.float64,
           "high": np.float64, "context": np.int32}
#: bump when the record's or a page's shape changes: everything is then read and built again
FORMAT = 1
#: how many sessions are read from the store at once
BATCH = 200
#: fewer tracks to analyse, or pages to build, than this are done in this process alone
PARALLEL_FROM = 400


def check_site(text: str) -> Path:
    """The directory to publish into: new, empty, or a site fsbench published (its record in it);
    never a directory of other files, which a publish would mix its own into."""
    try:
        where = directory_for_files(text)
    except ValueError as exc:
        raise UsageError(f"{text}: {exc}") from None
    if where.is_dir() and any(where.iterdir()) and not (where / STATE).is_file():
        raise UsageError(f"{text}: the directory holds files of something else (no {STATE} of an "
                         "earlier publish); name a new or empty directory, or one fsbench publish wrote")
    return where


@dataclass
class Published:
    """What a publish did."""

    sessions: int = 0  # complete sessions on the site
    read: int = 0  # of them read from the store this time
    tracks: int = 0
    analysed: int = 0  # tracks whose change points were found again
    changes: int = 0
    pages: int = 0
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    reports: list[int] = field(default_factory=list)  # written this time

    def line(self, site_dir: Path) -> str:
        return (f"fsbench publish: {site_dir}: {self.sessions} sessions ({self.read} read from the store), "
                f"{self.tracks} series, {self.changes} change point{'s' * (self.changes != 1)} ({self.analysed} "
                "series analysed); "
                f"{len(self.written)} of {self.pages} pages written, {len(self.removed)} removed, "
                f"{len(self.reports)} reports written; open {site_dir / 'index.html'}")


# --- the site's record -------------------------------------------------------------------------


@dataclass
class Record:
    """The site's record of itself (STATE) and the figures it holds (POINTS)."""

    state: dict
    points: dict[str, np.ndarray]

    @property
    def sessions(self) -> dict[str, list]:
        """str(id) -> [host, token, started, fsbench commit, finished]"""
        return self.state["sessions"]


def empty_points() -> dict[str, np.ndarray]:
    return {name: np.zeros(0, dtype) for name, dtype in COLUMNS.items()}


def load_record(site_dir: Path, store_name: str) -> Record:
    """The site's record, or a fresh one (none yet, another store's, another FORMAT), which keeps
    the pages of the old one to replace or remove."""
    fresh = {"format": FORMAT, "store": store_name, "sessions": {}, "tracks": [], "contexts": [], "gates": {},
             "pages": {}, "analysed": {}}
    try:
        state = json.loads((site_dir / STATE).read_text())
        with np.load(site_dir / POINTS, allow_pickle=False) as found:
            points = {name: found[name].astype(dtype) for name, dtype in COLUMNS.items()}
    except (OSError, ValueError, KeyError):
        state, points = {"pages": {}}, empty_points()
    if state.get("format") != FORMAT or state.get("store") != store_name:
        return Record({**fresh, "pages": state.get("pages", {})}, empty_points())
    return Record(state, points)


def save_record(site_dir: Path, record: Record) -> None:
    (site_dir / POINTS).parent.mkdir(parents=True, exist_ok=True)
    temporary = site_dir / POINTS.with_name(f".points.{os.getpid()}.npz")
    np.savez(temporary, **record.points)
    os.replace(temporary, site_dir / POINTS)
    write_file(site_dir / STATE, json.dumps(record.state, separators=(",", ":")))


def case_name(where: tuple[str, str, str]) -> str:
    return "\t".join(where)


def update(record: Record, store: Store, rows: Sequence[SessionRow], say: Callable[[str], None]) -> int:
    """Bring the record to the store's complete sessions (rows): drop the sessions gone or
    changed, read the new and changed ones; how many were read."""
    known, gates = record.sessions, record.state["gates"]
    stale = [row for row in rows if known.get(str(row.id), [None] * 5)[1::3] != [row.token, row.finished]]
    current = {str(row.id) for row in rows}
    dropped = {int(i) for i in known if i not in current} | {row.id for row in stale if str(row.id) in known}
    if dropped:
        keep = ~np.isin(record.points["session"], sorted(dropped))
        record.points = {name: column[keep] for name, column in record.points.items()}
        for session in dropped:
            known.pop(str(session), None)
            gates.pop(str(session), None)
    tracks = {tuple(key): i for i, key in enumerate(record.state["tracks"])}
    contexts = {tuple(context): i for i, context in enumerate(record.state["contexts"])}
    added: dict[str, list] = {name: [] for name in COLUMNS}
    for start in range(0, len(stale), BATCH):
        batch = stale[start:start + BATCH]
        summaries = store.case_summaries(row.id for row in batch)
        for row in batch:
            found = history.session_points(row, summaries.get(row.id, []))
            commit = str(row.manifest.get("fsbench_commit") or "unknown")
            known[str(row.id)] = [row.host, row.token, row.started, commit, row.finished]
            if found.gates:
                gates[str(row.id)] = {case_name(where): entries for where, entries in found.gates.items()}
            for key, (runs, median, low, high) in found.points:
                context = found.contexts[key[1:4]]
                added["track"].append(tracks.setdefault(key, len(tracks)))
                added["context"].append(contexts.setdefault(context, len(contexts)))
                added["session"].append(row.id)
                added["runs"].append(runs)
                added["median"].append(median)
                added["low"].append(low)
                added["high"].append(high)
        if len(stale) > BATCH:
            say(f"fsbench publish: read {min(start + BATCH, len(stale))} of {len(stale)} sessions from the store")
    record.state["tracks"] = [list(key) for key in tracks]
    record.state["contexts"] = [list(context) for context in contexts]
    record.points = {name: np.concatenate([record.points[name], np.asarray(added[name], dtype)])
                     for name, dtype in COLUMNS.items()}
    return len(stale)


def build_tracks(record: Record) -> list[history.Track]:
    """Every track of the record, its points in session order; each with a digest of them (mark)."""
    facts = history.Facts({int(i): tuple(v[:4]) for i, v in record.sessions.items()},
                          [tuple(context) for context in record.state["contexts"]])
    points = record.points
    order = np.lexsort((points["session"], points["track"]))
    columns = {name: column[order] for name, column in points.items()}
    cuts = [0, *(np.flatnonzero(np.diff(columns["track"])) + 1).tolist(), len(order)]
    keys = record.state["tracks"]
    found = []
    for a, b in pairwise(cuts):
        if a == b:
            continue
        host, test, workload, workload_params, metric, params, unit, direction = keys[int(columns["track"][a])]
        track = history.Track(host, SeriesKey(test, workload, workload_params, metric, params), unit,
                              DIRECTIONS[direction], facts, columns["session"][a:b].tolist(),
                              columns["runs"][a:b].tolist(), columns["median"][a:b].tolist(),
                              columns["low"][a:b].tolist(), columns["high"][a:b].tolist(),
                              columns["context"][a:b].tolist())
        digest = hashlib.sha1()
        for name in COLUMNS:
            digest.update(columns[name][a:b].tobytes())
        track.mark = digest.hexdigest()
        found.append(track)
    return found


# --- the work -----------------------------------------------------------------------------------


def write_bytes(path: Path, data: bytes) -> None:
    """Through a temporary file renamed over path, so a reader never sees half a page."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def write_file(path: Path, text: str) -> bool:
    """Write text to path unless the file already holds it; whether it was written."""
    data = text.encode()
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    write_bytes(path, data)
    return True


def digest(*parts: object) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()


def _apply(job: tuple[Callable, list]) -> list:
    function, items = job
    return [function(item) for item in items]


def in_parallel(function: Callable, items: list, workers: int) -> list:
    """[function(item) for item in items], in workers processes (forked: they share what this one
    holds) when there are PARALLEL_FROM items or more."""
    if workers <= 1 or len(items) < PARALLEL_FROM:
        return [function(item) for item in items]
    size = -(-len(items) // (workers * 4))
    chunks = [items[i:i + size] for i in range(0, len(items), size)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return [result for found in pool.map(_apply, [(function, chunk) for chunk in chunks]) for result in found]


def _detect(item: tuple[list[float], str, float]) -> list:
    return history.detect(*item)


def find_changes(tracks: Sequence[history.Track], state: dict, max_p: float, workers: int) -> int:
    """Each track's change points: kept from the last publish where its points did not change,
    else found again; how many were found again."""
    kept = state["analysed"]
    marks = {track_id(t): digest(t.mark, max_p) for t in tracks}
    todo = [t for t in tracks if kept.get(track_id(t), [None])[0] != marks[track_id(t)]]
    found = in_parallel(_detect, [(t.medians, t.key.metric, max_p) for t in todo], workers)
    for track, result in zip(todo, found):
        kept[track_id(track)] = [marks[track_id(track)], [list(c) for c in result]]
    state["analysed"] = {name: kept[name] for name in marks}
    for track in tracks:
        track.detect(kept[track_id(track)][1])
    return len(todo)


def track_id(track: history.Track) -> str:
    k = track.key
    return "\t".join((track.host, k.test, k.workload, k.workload_params, k.metric, k.params))


def chosen_reports(choice: str, record: Record) -> list[int]:
    """The sessions whose report --reports asks for: each host's newest, every one, or none."""
    if choice == "none":
        return []
    ids = sorted(int(i) for i in record.sessions)
    if choice == "all":
        return ids
    return sorted({record.sessions[str(i)][0]: i for i in ids}.values())


def write_reports(store: Store, site_dir: Path, sessions: Iterable[int], alpha: float) -> list[int]:
    """Each session's report (views/report.py, as `fsbench report ID` writes it: a gated session's
    against the baseline its gate compared with) where the site has none yet; the sessions written."""
    from . import report  # matplotlib: only when a report is written

    written = []
    for session in sessions:
        path = site_dir / site.report_path(session)
        if path.is_file():
            continue
        base_ids, base_label = gated_baseline(store, session)
        write_file(path, report.render(report.report_data(store, session, base_ids, base_label, alpha=alpha)))
        written.append(session)
    return written


def existing_reports(site_dir: Path) -> frozenset[int]:
    numbers = (path.stem.removeprefix("session-") for path in (site_dir / "reports").glob("session-*.html"))
    return frozenset(int(n) for n in numbers if n.isdigit())


# --- the pages ---------------------------------------------------------------------------------

#: the pages a publish builds: path -> what builds its text (what forked processes read)
_BUILDERS: dict[str, Callable[[], str]] = {}


def _build(job: tuple[str, Path, str | None]) -> tuple[str, str]:
    """Build a page and write it unless its text is what was written last time (its digest: known)."""
    name, site_dir, known = job
    data = _BUILDERS[name]().encode()
    written = hashlib.sha1(data).hexdigest()
    if written != known or not (site_dir / name).is_file():
        write_bytes(site_dir / name, data)
    return name, written


def overview_pages(site_dir: Path, before: dict[str, str], shows: str) -> list[str] | None:
    """The index and the changes pages the last publish made, where what they show did not change
    since (shows: its digest) and they are all there; else None."""
    found = [name for name, made in before.items() if name == "index.html" or name.startswith("changes")]
    if found and all(before[name] == shows and (site_dir / name).is_file() for name in found):
        return found
    return None


def pages(tracks: Sequence[history.Track], record: Record, reports: frozenset[int], store_name: str,
          site_dir: Path) -> dict[str, tuple[str, Callable[[], str]]]:
    """Every page: path -> (what it shows, as a digest; what builds its text)."""
    by_case: dict[history.Case, dict[str, list[history.Track]]] = {}
    for track in sorted(tracks, key=lambda t: (t.key.test, t.key.workload_params, t.host, not t.headline,
                                               t.key.metric, t.key.params)):
        by_case.setdefault(track.case, {}).setdefault(track.host, []).append(track)
    hosts = sorted({t.host for t in tracks})
    newest = {host: int(i) for i, (host, *_) in sorted(record.sessions.items(), key=lambda item: int(item[0]))}
    gates = record.state["gates"]
    made: dict[str, tuple[str, Callable[[], str]]] = {}
    rows = []
    for case, by_host in sorted(by_case.items(), key=lambda item: (item[0].label, item[0].workload_params)):
        where = case_name((case.test, case.workload, case.workload_params))
        cells = {host: site.Cell(history.primary(found), history.verdict(
            found, newest[host], gates.get(str(newest[host]), {}).get(where, []))) for host, found in by_host.items()}
        rows.append((case, cells))
        shows = digest(FORMAT, [(track_id(t), t.mark) for found in by_host.values() for t in found if t.headline])
        made[site.case_path(case)] = (shows, lambda case=case, by_host=by_host: site.case_page(case, by_host))
        for host, found in by_host.items():
            listed = site.sessions_table(found)
            shows = digest(FORMAT, [(track_id(t), t.mark, [(c.index, c.pvalue) for c in t.changes]) for t in found],
                           sorted(set(listed.axis) & reports))
            made[site.host_path(case, host)] = (shows, lambda case=case, host=host, found=found, listed=listed:
                                                site.host_page(case, host, found, listed, reports))
            ids = [track_id(t) for t in found]
            for month, sessions in listed.months.items():
                rows_shown = [(s, record.sessions[str(s)][4], listed.kernels[s]) for s in sessions]
                shows = digest(FORMAT, ids, rows_shown, sorted(set(sessions) & reports))
                made[site.month_path(case, host, month)] = (
                    shows, lambda case=case, host=host, found=found, listed=listed, month=month:
                    site.month_page(case, host, found, listed, month, reports))
    shows = digest(FORMAT, [(track_id(t), t.mark, [(c.index, c.pvalue) for c in t.changes]) for t in tracks],
                   gates, sorted(reports))
    kept = overview_pages(site_dir, record.state["pages"], shows)
    if kept is not None:
        return {**made, **{name: (shows, lambda: "") for name in kept}}
    regressions = [(int(session), host_of, where.split("\t"), line) for session, cases in gates.items()
                   for host_of in [record.sessions[session][0]] for where, entries in cases.items()
                   for verdict, failed, line in entries if verdict == REGRESSION]
    started = {int(i): v[2] for i, v in record.sessions.items()}
    listed = site.events(tracks, [(started[s], s, h, history.Case(*w), line) for s, h, w, line in regressions])
    for name, text in site.changes_pages(listed, reports).items():
        made[name] = (shows, lambda text=text: text)
    facts = [f"{len(record.sessions)} complete sessions of {len(hosts)} hosts in {store_name}, {len(by_case)} cases, "
             f"{len(tracks)} series; {sum(len(t.changes) for t in tracks)} change points and {len(regressions)} gate "
             f"regressions (newest first: changes.html); the newest session started "
             f"{max(started.values(), default='never')}."]
    made["index.html"] = (shows, lambda: site.index_page("fsbench: cases x hosts", hosts, rows, facts))
    return made


def publish(store: Store, site_dir: Path, reports: str = "none", max_p: float = changes.MAX_PVALUE,
            alpha: float = 0.05, say: Callable[[str], None] = print, workers: int | None = None) -> Published:
    """Publish the store's complete sessions into site_dir (check_site's), incrementally."""
    workers = workers or os.cpu_count() or 1
    done = Published()
    record = load_record(site_dir, store.path)
    if not (site_dir / STATE).is_file():
        # the site's record before its first page or report: a first publish cut short (a signal) left a
        # directory that is the site's, which the next publish finishes instead of refusing as another's
        site_dir.mkdir(parents=True, exist_ok=True)
        save_record(site_dir, record)
    rows = [row for row in store.sessions() if row.status == "complete"]
    done.read = update(record, store, rows, say)
    done.sessions = len(record.sessions)
    tracks = build_tracks(record)
    done.tracks = len(tracks)
    done.analysed = find_changes(tracks, record.state, max_p, workers)
    done.changes = sum(len(t.changes) for t in tracks)
    done.reports = write_reports(store, site_dir, chosen_reports(reports, record), alpha)
    made = pages(tracks, record, existing_reports(site_dir), store.path, site_dir)
    done.pages = len(made)
    before = record.state["pages"]
    todo = [name for name, (shows, _) in made.items() if before.get(name) != shows or not (site_dir / name).is_file()]
    for name in todo:
        try:
            check_replaceable(site_dir / name, site.MARK)
        except ValueError as exc:
            raise UsageError(f"fsbench publish {site_dir}: {site_dir / name} {exc}") from None
    _BUILDERS.clear()
    _BUILDERS.update({name: made[name][1] for name in todo})
    texts = record.state.setdefault("texts", {})  # the digest of each page's text as written
    try:
        for name, written in in_parallel(_build, [(n, site_dir, texts.get(n)) for n in todo], workers):
            if written != texts.get(name):
                done.written.append(name)
            texts[name] = written
    finally:
        _BUILDERS.clear()
    for name in sorted(set(before) - set(made)):
        (site_dir / name).unlink(missing_ok=True)
        texts.pop(name, None)
        done.removed.append(name)
    record.state["pages"] = {name: shows for name, (shows, _) in made.items()}
    save_record(site_dir, record)
    return done
