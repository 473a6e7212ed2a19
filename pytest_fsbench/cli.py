"""The `fsbench` command: its argument wiring, and the bodies of the commands that have no home of
their own (the PTS commands' are in pts/commands.py)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import textwrap
from importlib import metadata
from pathlib import Path
from typing import NoReturn

from .targets.cleanup import find_leftovers, remove_leftovers
from .kernels.guest import GuestError, boot_facts
from .kernels.probe import probe
from .kernels.vm import vm_boot_facts, vm_missing
from .session import RUN_ROOT
from . import docs, doctor, fleet, studies
from .studies import launch as study_launch
from .errors import FsbenchError, UsageError
from .pts import commands as pts_commands
from .views.json_export import changes_document, comparison_document, export_session, sessions_document
from .options import (add_to_argparse, check_replaceable, directory_for_files, file_to_write, given_twice,
                      unexpanded_home, write_whole)
from .settings import BY_FLAG, DEFAULT_STORE, store_location
from .verdicts.baseline import as_the_gate_compared, compare_pairs, compared_sides, disturbances, gated_baseline
from .verdicts.disturbance import busier_baseline
from .verdicts.gate import (WITHIN, busier_baseline_message, check_compared, count_note, disturbed_message,
                            gate_message, outcomes, rule_for, verdict)
from .store.databases import is_url, redact
from .store.facts import ran_text, study_marker
from .store.results import Store
from .metrics import is_count
from .system.daemons import serialized
from .filesystems import DAEMONS
from .system.commands import execute
from .measure.progress import fit, say, terminal_width
from .views.answer import answer_lines, gate_word, report_answer
from .views.tables import comparison_lines, gate_section


def cmd_doctor(args: argparse.Namespace) -> int:
    """What can run here, and under each guest kernel; exit 1 when the store or the image
    directory a session would use cannot be used."""
    kernels = BY_FLAG["--kernel"].value(args.kernel)  # a bad value before the table, not after it
    store = BY_FLAG["--store"].value(args.fsbench_store)
    image_dir = args.fsbench_image_dir
    host = probe()
    width = terminal_width()
    print("\n".join(doctor.doctor_lines(host, width)))
    usable = True
    for line, ok in (doctor.store_line(store, redact(store)), doctor.image_dir_line(image_dir, execute)):
        print("\n".join(doctor.wrapped(line, width)))
        usable = usable and ok
    for kernel in kernels:
        if not kernel.guest:
            continue
        facts, accel, reason = None, None, vm_missing(kernel) if kernel.vm else kernel.missing()
        if reason is None:
            with tempfile.TemporaryDirectory(prefix="fsbench-doctor-") as directory:
                try:
                    if kernel.vm:
                        facts, accel = vm_boot_facts(kernel, Path(directory))
                    else:
                        facts = boot_facts(kernel, Path(directory))
                except GuestError as exc:
                    reason = str(exc)
        print("\n".join(doctor.guest_lines(kernel, facts, reason, width, accel=accel)))
    print("\n".join(doctor.wrapped(doctor.summary_line(host), width)))
    return 0 if usable else 1


def cmd_cleanup(args: argparse.Namespace) -> int:
    run_root = Path(args.run_root)
    if run_root.exists() and not run_root.is_dir() or not run_root.exists() and args.run_root != str(RUN_ROOT):
        # issue 34: a file (or a mistyped directory) was searched, and "nothing left behind" said
        what = "is no directory" if run_root.exists() else "does not exist"
        raise UsageError(f"--run-root={args.run_root}: {what}; name the directory sessions keep their state in "
                         f"(sessions use {RUN_ROOT}, the default)")
    execute_serialized = serialized(execute, DAEMONS)  # live sessions' daemons serve them too
    found = find_leftovers(execute_serialized, run_root)
    for directory in found.unjudged:
        print(f"fsbench cleanup: left alone {directory}: neither its state file nor its name (fsbench's are PID-HEX) "
              "tells which session it is, so whether that session still runs cannot be told; look inside and remove "
              "it by hand once no fsbench session uses it", file=sys.stderr)
    if found.empty():
        if not found.unjudged:
            print("fsbench cleanup: nothing left behind by earlier runs")
        return 1 if found.unjudged else 0
    say(*(f"{'would remove' if args.dry_run else 'removing'} {line}" for line in found.lines()))
    if args.dry_run:
        return 1 if found.unjudged else 0
    errors = remove_leftovers(found, execute_serialized)
    for error in errors:
        say(f"fsbench cleanup: could not remove: {error}", file=sys.stderr)
    return 1 if errors or found.unjudged else 0


def open_store(args: argparse.Namespace) -> Store:
    """The store named by --store, which must already be an fsbench store (nothing is written to
    a file that is not one)."""
    return Store(BY_FLAG["--store"].value(args.fsbench_store), create=False)


def output_path(text: str, kind: str, args: argparse.Namespace, force: bool = False) -> Path | None:
    """-o's file (None: standard output) for an output of kind; a place that cannot be written, or
    a file fsbench may not replace (the store, a database, a file it did not write), is a usage
    error before anything is computed."""
    if text == "-":
        return None
    if not text.strip():
        raise UsageError(f"-o {text!r}: give the file to write, or - for standard output")
    try:
        where = file_to_write(text)
        check_replaceable(where, kind, [BY_FLAG["--store"].value(args.fsbench_store)], force)
    except ValueError as exc:
        raise UsageError(f"-o {text}: {exc}") from None
    return where


def check_measured(store: Store, session_ids: list[int], what: str) -> None:
    """A session that measured nothing (failed, empty, or no run recorded) has nothing to
    compare or export: a usage error, not an empty table or file (issue 23)."""
    for session_id in session_ids:
        if store.measured_runs(session_id) == 0:
            raise UsageError(f"session {session_id} ({store.status(session_id)}) measured nothing, so there is "
                             f"nothing to {what}; fsbench sessions lists the sessions")


def cmd_compare(args: argparse.Namespace) -> int:
    """The new session against the baseline; exit 1 on a regression under --fail-on-regression's
    rules (without rules: on any significantly worse headline metric), else 0."""
    alpha = BY_FLAG["--alpha"].value(args.fsbench_alpha)
    rules = BY_FLAG["--fail-on-regression"].values(args.fsbench_fail_on_regression)
    store = open_store(args)
    new_id = store.resolve(args.new)
    base_ids = [i for i in store.baseline_sessions(args.base) if i != new_id]
    if not base_ids:
        raise UsageError(f"fsbench compare {args.base} {args.new}: the same session twice; name two")
    check_measured(store, [*base_ids, new_id], "compare")
    named = f"sessions {', '.join(map(str, base_ids))}" if len(base_ids) > 1 else f"session {base_ids[0]}"
    hosts = store.hosts([*base_ids, new_id])
    base_hosts = sorted({hosts[i] for i in base_ids})
    base_ref = "" if args.base == str(base_ids[-1]) else f"{args.base}, "
    new_ref = "" if args.new == str(new_id) else f"{args.new}, "
    notes = [f"{named} ({base_ref}on {', '.join(base_hosts)}) -> session {new_id} "
             f"({new_ref}on {hosts[new_id]})"]
    if base_hosts != [hosts[new_id]]:
        notes.append("the sessions ran on different machines: a change below is the machines' difference as "
                     "much as the software's")
    pairs = as_the_gate_compared(compare_pairs(store, base_ids, new_id, alpha,
                                               f"fsbench compare {args.base} {args.new}"),
                                 store.session_export(new_id)["cases"], base_ids)
    check_compared(rules, {s.key.metric for _, s, _ in pairs})
    keys = [s.key for _, s, _ in pairs]
    found = outcomes(pairs, rules, disturbances(store, base_ids, new_id, keys),
                     disturbances(store, base_ids, new_id, keys, busier_baseline))
    status = 1 if any(o.failed for o in found) else 0
    if args.json:
        print(json.dumps(comparison_document(base_ids, new_id, hosts, notes, found, rules, alpha, status),
                         indent=2, sort_keys=True))
        return status
    width = terminal_width()
    lines = {id(o): line for o in found if (line := outcome_line(o, rules)) is not None}
    gates = {(o.series.key.test, o.series.key.metric, o.series.key.params, False): gate_word(lines[id(o)])
             for o in found if id(o) in lines}
    bases, kernels = compared_sides(store, base_ids, new_id)
    said = report_answer([], [(o.case, o.series, o.comparison) for o in found], [], args.base, bases, kernels,
                         f"session {new_id}", gates)
    print("\n".join(line for note in notes for line in fit(f"fsbench compare: {note}", width)))
    print("\n".join(part for line in answer_lines(said) for part in fit(line, width)))  # the answer first
    print("\n".join(comparison_lines(pairs, alpha, width=width, bases=bases)))
    gated = [(lines[id(o)], o.failed, o.series.key.metric) for o in found if id(o) in lines]
    if gated:
        print("\n".join(gate_section(gated, width, failures_shown=False)))
    print("\n".join(fit(f"fsbench compare: {outcome_summary(found, rules)}; exit {status}", width)))
    return status


def outcome_line(outcome, rules: tuple) -> str | None:
    """The gate's line on one comparison of fsbench compare (None: no rule gated it, nor was it
    disturbed), as the session's gate would have written it."""
    s = outcome.series
    if outcome.disturbed and (outcome.gate is not None or not rules):
        return disturbed_message(s.case_id, s.key.metric, s.key.params, s.unit, outcome.comparison, outcome.disturbed)
    if outcome.gate is None:
        return None
    rule = rule_for(list(rules), outcome.series.key.metric)
    if outcome.busier and verdict(outcome.comparison, rule.threshold_pct) == WITHIN:
        return busier_baseline_message(s.case_id, s.key.metric, s.key.params, s.unit, outcome.comparison,
                                       outcome.busier)
    note = count_note(rule, s.key.metric) if is_count(s.key.metric) else f"; {outcome.busier}" if outcome.busier else ""
    return gate_message(s.case_id, s.key.metric, s.key.params, s.unit, outcome.comparison, rule,
                        "a new session with --runs") + note


def outcome_summary(found: list, rules: tuple) -> str:
    """What decided the exit status, in one clause."""
    failed = sum(o.failed for o in found)
    if rules:
        ruled = ", ".join(f"{r.metric or 'every headline metric'}: {r.threshold_pct:g}%" for r in rules)
        return (f"{failed} regression{'s' * (failed != 1)} under --fail-on-regression ({ruled}) in "
                f"{sum(o.gate is not None for o in found)} gated comparisons")
    return (f"{failed} significantly worse headline metric{'s' * (failed != 1)} (no --fail-on-regression: "
            "any significantly worse one fails)")


def report_baseline(store: Store, session_id: int, base: str | None) -> tuple[list[int], str | None]:
    """The baseline sessions --compare names (never the reported session itself); without
    --compare, those the session's own gate compared with (issue 43: a gated session's report
    opens with the gate's verdicts), when the store still holds them under the name it gave."""
    if base is None:
        return gated_baseline(store, session_id)
    ids = [i for i in store.baseline_sessions(base) if i != session_id]
    if not ids:
        raise UsageError(f"--compare {base}: that is the reported session itself; name another session or baseline")
    check_measured(store, ids, "compare with")  # issue 34: a failed session was drawn as a baseline
    return ids, base


def cmd_report(args: argparse.Namespace) -> int:
    from .views import report  # matplotlib only for the commands that draw
    alpha = BY_FLAG["--alpha"].value(args.fsbench_alpha)
    output = output_path(args.output, "report", args, args.force)
    figures = None
    if args.figures is not None:
        try:
            figures = directory_for_files(args.figures)
        except ValueError as exc:
            raise UsageError(f"--figures={args.figures}: {exc}") from None
    store = open_store(args)
    session_id = store.resolve(args.session)
    base_ids, base_label = report_baseline(store, session_id, args.compare)
    data = report.report_data(store, session_id, base_ids, base_label, alpha, args.allowed)
    if figures is not None:
        for path in report.figure_paths(data, figures, args.format):
            try:
                check_replaceable(path, "figure", [BY_FLAG["--store"].value(args.fsbench_store)], args.force)
            except ValueError as exc:
                raise UsageError(f"--figures={args.figures}: {path} {exc}") from None
    page = report.render(data)
    if output is None:
        sys.stdout.write(page)
    else:
        write_whole(output, page)
        say(f"fsbench report: wrote {output} (session {session_id}"
            + (f" against {base_label}" if base_label else "") + ")", file=sys.stderr)
    if figures is not None:
        for path in report.write_figures(data, figures, args.format):
            say(f"fsbench report: wrote {path}", file=sys.stderr)
    return 0


def allowed_pct(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:  # found by issue 44's sweep: argparse named the function ('invalid allowed_pct value')
        raise argparse.ArgumentTypeError(f"{text!r}: give the allowed change as a percent, e.g. 5%") from None
    if not 0 < value < 100:
        raise argparse.ArgumentTypeError(f"{text!r}: give the allowed change as a percent above 0 and below 100")
    return value


def study_output(output: str | None, name: str, store: Path | str) -> Path:
    """-o's file, else study-NAME.html beside the SQLite store (a server's store has no
    directory: then in the default store's)."""
    if output is None:
        directory = Path(DEFAULT_STORE).parent.absolute() if is_url(store) else Path(store).parent
        page = directory / f"study-{name}.html"
        try:
            check_replaceable(page, "report", [store], force=None)
        except ValueError as exc:
            raise UsageError(f"the study's page {page} {exc} with -o FILE") from None
        return page
    page = output_path(output, "report", argparse.Namespace(fsbench_store=str(store)))
    if page is None:
        raise UsageError("-o -: the study's page is a file; name one")
    return page


#: what the studies' quick scales take, as their files say (a unit test keeps it so; reading five study
#: files on every command's start to say it would cost every command)
QUICK_MINUTES = "7 to 47"


def quick_minutes(scale: dict) -> str:
    """A scale's minutes as measured: "12-27" when measured alone and beside busy neighbours."""
    least = min((table["minutes"] for table in scale.get("loads", []) if "minutes" in table), default=None)
    return f"{least}-{scale['minutes']}" if least is not None else str(scale["minutes"])


def cmd_study(args: argparse.Namespace) -> int:
    """List the studies, or re-run one through the pytest face and write its report."""
    from .views import report
    from .studies import page as study_page
    if args.name is None:
        width = terminal_width()
        for s in studies.studies().values():
            quick = s.scale("quick")
            head = f"{s.name:17} seed {s.seed}  {s.year}  "
            # the summary wrapped under itself, within the terminal (issue 35: lines of 144-183 columns)
            print("\n".join(textwrap.wrap(f"{s.summary} (quick: about {quick_minutes(quick)} min; {len(s.checks())} "
                                           "findings checked)", width, initial_indent=head,
                                           subsequent_indent=" " * len(head), break_long_words=False)))
        return 0
    chosen = studies.study(args.name)
    alpha = BY_FLAG["--alpha"].value(args.fsbench_alpha)  # found by issue 44's sweep: checked only after the study ran
    cwd = Path.cwd()
    pytest_args = study_launch.study_args(chosen, args.scale, args.pytest_args, cwd)
    store_path = study_launch.study_store(pytest_args)
    output = study_output(args.output, chosen.name, store_path)
    plan = study_launch.plan(chosen, args.scale, pytest_args, cwd)
    if not plan.tests:  # found by the sweep: a -k that selects nothing planned 0 tests and exited 0
        raise UsageError(f"the study's options select none of its tests ({' '.join(args.pytest_args) or 'its own'}); "
                         "loosen -k or the options that choose the cases")
    note = study_launch.selection_note(chosen, args.scale, args.pytest_args)
    width = terminal_width()
    print("\n".join([*plan.lines(width), *(fit(note, width) if note else [])]), flush=True)
    study_launch.check_room(plan)
    if args.plan:
        return 0
    existed = is_url(store_path) or Path(store_path).exists()
    before = {row.id for row in Store(store_path).sessions()} if existed else set()
    pytest_args = plan.args  # with the runs chosen per claim
    status = study_launch.execute_pytest(pytest_args, cwd, plan.case_seconds,
                                         study_marker(chosen.name, args.scale))
    store = Store(store_path, create=False)
    new = [row.id for row in store.sessions() if row.id not in before
           and store.session_export(row.id)["session"]["args"].get("argv", [])[-len(pytest_args):] == pytest_args]
    if not new:
        raise FsbenchError(f"pytest ended with status {status} and recorded no session of study {chosen.name} "
                           f"in {store_path}")
    data = report.report_data(store, max(new), alpha=alpha)
    page = report.render(data, f"fsbench study {chosen.name}: session {max(new)}",
                         study_page.preface(chosen, data, args.scale))
    output.parent.mkdir(parents=True, exist_ok=True)
    write_whole(output, page)
    found = study_page.verdicts(chosen, data)
    say(f"fsbench study: wrote {output}: " + ", ".join(
        f"{sum(1 for v in found if v.verdict == k)} {k}" for k in studies.VERDICTS))
    return status


def cmd_export(args: argparse.Namespace) -> int:
    pts_commands.check_export_options(args.format == "pts", args.pts_save, args.suffix, args.force,
                                      args.output != "-")
    output = output_path(args.output, "export", args, args.force)
    store = open_store(args)
    session_id = store.resolve(args.session)
    check_measured(store, [session_id], "export")
    if args.format == "pts":
        return pts_commands.export(store, session_id, output, args.pts_save, args.force, args.suffix)
    text = json.dumps(export_session(store, session_id), indent=2, sort_keys=True)
    if output is None:
        print(text)
    else:
        write_whole(output, text + "\n")
        say(f"fsbench export: wrote {output}")
    return 0


def cmd_upload(args: argparse.Namespace) -> int:
    return pts_commands.upload(args.result, args.pts_binary)


def cmd_docs(args: argparse.Namespace) -> int:
    """Print the site's reference pages, or write every generated page into the site's directory."""
    if args.write is None:
        print("\n".join(docs.reference_pages().values()), end="")
        return 0
    if not args.write.is_dir():
        raise UsageError(f"--write={args.write}: not a directory; name the site's pages' directory "
                         "(docs, beside mkdocs.yml)")
    if not (args.write.absolute().parent / "mkdocs.yml").is_file():  # issue 44: any empty directory was written
        raise UsageError(f"--write={args.write}: no mkdocs.yml beside it, so it is no site's pages' "
                         "directory; name the docs directory of an fsbench checkout (beside its mkdocs.yml)")
    try:
        written = docs.write_pages(args.write, docs.generated_pages(args.write / docs.LAYERS_FILE))
    except OSError as exc:
        raise UsageError(f"--write={args.write}: {exc}") from None
    say(f"fsbench docs: {', '.join(written) or 'nothing'} rewritten in {args.write}"
          f"{'' if written else ': every generated page is current'}")
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.since and args.until and args.since >= args.until:  # found by the sweep: "none that match"
        raise UsageError(f"--since {args.since} is not before --until {args.until}, so no session could match; swap "
                         "them or widen the range")
    rows = store.sessions(host=args.host, since=args.since, until=args.until)
    ran = store.sessions_ran(row.id for row in rows)
    if args.json:
        print(json.dumps(sessions_document(store.path, rows, ran), indent=2, sort_keys=True))
        return 0
    if not rows:
        chosen = " that match" if args.host or args.since or args.until else ""
        say(f"fsbench sessions: none in {store.path}{chosen}")
        return 0
    print(f"{'id':>6}  {'token':16}  {'started (UTC)':25}  {'status':11}  host")
    width = terminal_width()
    for row in rows:
        print(f"{row.id:6}  {row.token:16}  {row.started:25}  {row.status:11}  {row.host}")
        for line in textwrap.wrap(ran_text(ran[row.id]), width - 8, break_on_hyphens=False):
            print(" " * 8 + line)  # what it ran, under its row (issue 35)
    return 0


def utc_time(text: str) -> str:
    """A date or time as the store keeps them (ISO 8601, UTC), for comparing with its start times."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date or time; write e.g. 2026-11-01 or "
                                         "2026-11-01T12:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


def cmd_push(args: argparse.Namespace) -> int:
    """Copy a session of this store (a machine's own, offline) into another (the team's). The
    other store is made only for a session that exists (issue 23: a refused push left an empty
    file); its messages name --to."""
    to = store_location(args.to, "--to")
    source = open_store(args)
    try:
        session_id = source.resolve(args.session)
        target = Store(to, option="--to")
        try:
            pushed = source.push(session_id, target)
            say(f"fsbench push: session {session_id} of {source.path} is session {pushed} of {target.path}")
        finally:
            target.close()
    finally:
        source.close()
    return 0


def cmd_profiles(args: argparse.Namespace) -> int:
    return pts_commands.list_profiles()


def cmd_baseline(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.drop:
        held = store.drop_baseline(args.drop)
        say(f"fsbench baseline: forgot {args.drop} ({held} session(s); they stay in the store)")
        return 0
    baselines = store.baselines()
    if not baselines:
        say(f"fsbench baseline: no baselines in {store.path}; pytest --save=NAME makes one")
    for name, sessions in baselines.items():
        say(f"{name}: sessions {', '.join(map(str, sessions))}")
    return 0


def cmd_changes(args: argparse.Namespace) -> int:
    """Where each case's headline median changed level across the sessions, and what differed."""
    from .verdicts import changes  # ruptures and matplotlib only for this command
    from .views import change_points
    host = changes.chosen_host(args.host, args.all_hosts)
    max_p = changes.max_pvalue(args.max_pvalue)
    figure = (change_points.figure_path(args.figure, BY_FLAG["--store"].value(args.fsbench_store))
              if args.figure else None)
    store = open_store(args)
    found = changes.analyse(store, host, max_p)
    if args.json:
        print(json.dumps(changes_document(found, store.path), indent=2, sort_keys=True))
    else:
        say(*change_points.lines(found, store.path))
    said = sys.stderr if args.json else sys.stdout  # stdout holds the one JSON document
    if figure is not None and found.changes:
        say(f"fsbench changes: wrote {change_points.write_figure(found.changes, figure)}", file=said)
    elif figure is not None:
        say(f"fsbench changes: no change points, so no figure in {figure}", file=said)
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    """The store's history as a static site in DIR, re-published incrementally."""
    from .verdicts import changes
    from .views import publish  # numpy, scipy and matplotlib only for this command
    site_dir = publish.check_site(args.directory)
    max_p = changes.max_pvalue(args.max_pvalue)
    store = open_store(args)
    done = publish.publish(store, site_dir, args.reports, max_p, say=lambda line: print(line, file=sys.stderr))
    print("\n".join(fit(done.line(site_dir), terminal_width())))
    return 0


def cmd_fleet(args: argparse.Namespace) -> int:
    """One session per Slurm node into one store, or (fleet status JOBIDS) how a fleet's jobs stand."""
    store = BY_FLAG["--store"].value(args.fsbench_store)
    report = output_path(args.report, "report", args) if args.report is not None else None
    if args.report is not None and report is None:
        raise UsageError("--report -: the fleet's page is a file; name one")
    slurm = fleet.Slurm(execute)
    if args.nodes is None and args.words[:1] == ["status"]:
        return fleet.status(store, slurm, fleet.parse_job_ids(args.words[1:]), report)
    if args.nodes is None:
        raise UsageError("give --nodes=NODE,NODE,... (Slurm's names of the machines) and the sessions' "
                         "pytest arguments after --; or fsbench fleet status JOBIDS")
    request = fleet.Request(
        nodes=fleet.parse_nodes(args.nodes), store=store if is_url(store) else Path(store).absolute(),
        pytest_args=tuple(args.words), python=args.python, workdir=Path(args.workdir).absolute(),
        partition=args.partition, constraint=args.constraint,
        time=fleet.parse_time(args.time) if args.time is not None else None, report=report, shard=args.shard)
    return fleet.submit_only(request, slurm) if args.no_wait else fleet.run(request, slurm)


def cmd_bisect(args: argparse.Namespace) -> int:
    """Find the commit between --good and --bad that made the cases slower (exit 0 when the bisect
    ends: a commit named, no regression in the range, or why none could be named), or --plan it,
    --list the store's bisects, --resume one (a finished one: its result and page again)."""
    from .bisect import run as bisect_run  # the kernel builds and step sessions only for this command

    store_path = BY_FLAG["--store"].value(args.fsbench_store)
    report = output_path(args.report, "report", args, args.force) if args.report else None
    if args.report == "-":
        raise UsageError("--report -: the bisect's page is a file; name one")
    check_bisect_mode(args)
    if args.list:
        return bisect_list(open_store(args))
    if args.resume is not None:
        if args.tree or args.good or args.bad or args.words:
            raise UsageError("--resume continues a bisect as it was started: give no --tree, --good, --bad or "
                             "pytest arguments with it")
        store = open_store(args)
        bisector = bisect_run.resumed(store, None if args.resume == "last" else bisect_number(args.resume),
                                      str(store_path), execute)
    else:
        asked = bisect_asked(args)
        bisect_run.check_asked(asked)
        bisect_run.check_cases(asked, Path.cwd())
        if args.plan:
            return bisect_plan(asked, store_path)
        record = bisect_run.new_record(asked, execute)
        bisector = bisect_run.start(record, Store(store_path), str(store_path), execute)
        bisector.say(f"fsbench bisect {bisector.bisect_id}: {len(bisector.record.commits)} commits after "
                     f"{asked.good} ({bisector.record.good[:12]}) up to {asked.bad} ({bisector.record.bad[:12]}); "
                     f"work directory {bisector.layout.work}; store {redact(str(store_path))}")
    try:
        bisect_run.run(bisector)
    except KeyboardInterrupt:
        say(f"fsbench bisect: interrupted; fsbench bisect --resume={bisector.bisect_id} continues it (its kernels "
            "and verdicts are kept)", file=sys.stderr)
        return 130
    finally:
        if report is not None:
            report.write_text(bisect_run.report_page(bisector.record, bisector.bisect_id,
                                                     bisector.store.bisect(bisector.bisect_id).status))
    width = terminal_width()
    lines = [*bisect_run.step_lines(bisector.record), *bisect_run.result_lines(bisector.record),
             bisect_run.time_line(bisector.record)]
    print("\n".join(part for line in lines for part in fit(f"fsbench bisect: {line}" if not line.startswith(" ")
                                                               else line, width)))
    if report is not None:
        say(f"fsbench bisect: wrote {report}")
    return 0


def check_bisect_mode(args: argparse.Namespace) -> None:
    """--list, --plan and --resume each do one thing: an option of another mode beside one would be
    dropped without a word (issue 44's sweep: --resume --plan ran the bisect instead of planning)."""
    given = {"--tree": args.tree, "--good": args.good, "--bad": args.bad, "--resume": args.resume is not None,
             "--plan": args.plan, "--report": args.report, "pytest arguments": bool(args.words)}
    if args.list and any(given.values()):
        raise UsageError(f"--list lists the store's bisects: give no {', '.join(k for k, v in given.items() if v)} "
                         "with it")
    if args.plan and args.resume is not None:
        raise UsageError("--plan --resume: a plan is of a new bisect (--tree, --good, --bad); fsbench bisect --list "
                         "says how each earlier one stands")
    if args.plan and args.report:
        raise UsageError(f"--plan --report={args.report}: a plan writes no page; leave --report out")


def bisect_number(text: str) -> int:
    if not text.isdigit():
        raise UsageError(f"--resume={text}: give a bisect's number (fsbench bisect --list shows them) or leave it out "
                         "for the newest unfinished one")
    return int(text)


def bisect_asked(args: argparse.Namespace):
    from .bisect.build import read_config
    from .bisect.run import DEFAULT_RULES, Asked
    from .verdicts.gate import parse_rule

    missing = [flag for flag, value in (("--tree", args.tree), ("--good", args.good), ("--bad", args.bad)) if not value]
    if missing:
        raise UsageError(f"give {', '.join(missing)}: the kernel's git tree and the good and bad commits (or --resume, "
                         "--list)")
    config = read_config(args.config) if args.config is not None else ""
    rules = tuple(args.fsbench_fail_on_regression) or DEFAULT_RULES
    for rule in rules:
        parse_rule(rule)  # a bad rule is a usage error before anything is read
    return Asked(tree=Path(args.tree).absolute(), good=args.good, bad=args.bad, kind=args.kernel, config=config,
                 pytest_args=tuple(args.words), rules=rules, alpha=BY_FLAG["--alpha"].value(args.fsbench_alpha),
                 rounds=args.rounds, max_rounds=args.max_rounds, confirm_rounds=args.confirm_rounds,
                 jobs=args.jobs, work=Path(args.work_dir).absolute() if args.work_dir else None)


def bisect_plan(asked, store_path) -> int:
    from .bisect import run as bisect_run
    from .bisect.tree import check_tree, commits_between, resolve

    check_tree(asked.tree, execute)
    good, bad = resolve(asked.tree, asked.good, "--good", execute), resolve(asked.tree, asked.bad, "--bad", execute)
    commits = commits_between(asked.tree, good, bad, execute)
    history = []
    if is_url(store_path) or Path(store_path).exists():
        history = [row.record for row in Store(store_path, create=False).bisects()]
    built = (bisect_run.work_dir(asked) / "build" / ".config").exists()
    width = terminal_width()
    print("\n".join(part for line in bisect_run.plan_lines(asked, len(commits), history, built)
                    for part in fit(line, width)))
    return 0


def bisect_list(store: Store) -> int:
    rows = store.bisects()
    if not rows:
        say(f"fsbench bisect: no bisects in {store.path}")
    for row in rows:
        result = row.record.get("result") or {}
        said = (f"{result['culprit'][:12]} {result.get('subject', '')} ({result.get('confirmed')})"
                if result.get("verdict") == "found" else result.get("verdict", "not finished"))
        say(f"{row.id:4}  {row.started}  {row.status:11}  {row.tree} {row.good[:12]}..{row.bad[:12]}: {said}")
    return 0


#: --help's first paragraph
ABOUT = ("The benchmarks are pytest tests: pytest runs them, on a filesystem it builds for each case (its options "
         "--fs, --layout, --fs-opt choose the cases; pytest --help lists every option), and stores every run. This "
         "command checks the machine and reads what the sessions stored. For example, run benchmarks, save a "
         "baseline, gate against it:")
#: --help's examples: a pytest session's arguments
EXAMPLES = (["benchmarks/test_dd.py", "--fs=ext4,btrfs", "--layout=single,raid1"],
            ["benchmarks/test_dd.py", "--fs=btrfs", "--save=base"],
            ["benchmarks/test_dd.py", "--fs=btrfs", "--compare=base", "--fail-on-regression=5%"])
#: --help's last lines: the commonest commands and what each says
COMMONEST = (("doctor", "what this machine can run, and why not"), ("sessions", "the sessions in the store"),
             ("compare BASE NEW", "two sessions (or a baseline and a session) compared"),
             ("report last -o report.html", "the newest session's HTML report"),
             ("study", "the published studies fsbench re-runs"),
             ("cleanup", "remove what a killed session left behind"),
             ("fleet --nodes=a,b -- ARGS", "one session per Slurm node into one store"),
             ("bisect --tree=T --good=G --bad=B -- ARGS", "the commit that made the cases slower"))


def description(width: int) -> str:
    """--help's description within width (issue 43: lines to 99 columns on an 80-column terminal):
    the paragraph wrapped, each example a shell command broken between its arguments."""
    lines = ["fsbench: filesystem benchmarks as pytest tests.", "", *textwrap.wrap(ABOUT, width), ""]
    for argv in EXAMPLES:
        lines += study_launch.command_lines("  .venv/bin/pytest ", argv, width)
    return "\n".join(lines)


def epilog(width: int) -> str:
    """--help's last lines within width: each commonest command beside what it says where every one
    fits a line so, else what each says under it; a command longer than half the line always so."""
    commands = [f"  .venv/bin/fsbench {command}" for command, _ in COMMONEST]
    short = [(c, said) for c, (_, said) in zip(commands, COMMONEST) if len(c) < width // 2]
    column = max(len(c) for c, _ in short) + 2
    beside = all(column + len(said) <= width for _, said in short)
    lines = ["the commonest commands (from the checkout, as ./fsbench.sh set it up):"]
    for command, (_, said) in zip(commands, COMMONEST):
        lines += ([command.ljust(column) + said] if beside and len(command) < width // 2
                  else [command, *textwrap.wrap(said, width, initial_indent=" " * 6, subsequent_indent=" " * 6)])
    return "\n".join([*lines, "", ".venv/bin/fsbench COMMAND --help shows a command's options."])


def installed_version() -> str:
    try:
        return metadata.version("pytest-fsbench")
    except metadata.PackageNotFoundError:
        return "(not installed: run from its checkout)"


def parser() -> argparse.ArgumentParser:
    width = terminal_width()
    top = OneLineParser(prog="fsbench", description=description(width), epilog=epilog(width),
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"fsbench {installed_version()}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    doctor_parser = sub.add_parser("doctor", help="list which fs x layout cases can run on this machine, and why "
                                   "not; what the filesystems' implementations here lack; whether the store and the "
                                   "image directory a session would use can be used (exit 1 if not); and what each "
                                   "guest kernel can run")
    doctor_parser.add_argument("--kernel", default="host,uml", help="the guest kernels to boot and ask, as pytest's "
                               "--kernel (default: host,uml)")
    add_to_argparse(doctor_parser, BY_FLAG["--store"])
    add_to_argparse(doctor_parser, BY_FLAG["--image-dir"])
    doctor_parser.set_defaults(func=cmd_doctor)
    cleanup = sub.add_parser("cleanup", help="remove mounts, pools, arrays, loop devices and images of killed runs")
    cleanup.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    cleanup.add_argument("--run-root", default=str(RUN_ROOT), help=f"fsbench's run directory (default {RUN_ROOT})")
    cleanup.set_defaults(func=cmd_cleanup)
    compare = sub.add_parser("compare", help="compare two sessions' medians: change, CI, p-value, verdict; "
                             "exit 1 on a regression under --fail-on-regression (without it: on any "
                             "significantly worse headline metric)")
    compare.add_argument("base", help="session id, token, baseline name or 'last'")
    compare.add_argument("new", help="session id, token, baseline name or 'last'")
    add_to_argparse(compare, BY_FLAG["--alpha"])
    add_to_argparse(compare, BY_FLAG["--fail-on-regression"])
    compare.add_argument("--json", action="store_true", help="print one JSON document: the comparisons, "
                         "their verdicts and the exit status")
    add_to_argparse(compare, BY_FLAG["--store"])
    compare.set_defaults(func=cmd_compare)
    study = sub.add_parser("study", help="list the published studies fsbench re-runs, or re-run one and write its "
                           "report (findings checked, published numbers beside fsbench's); other options are "
                           "pytest's (e.g. --runs=10 --image-dir=/big)")
    study.add_argument("name", nargs="?", help="the study (none: list them)")
    study.add_argument("--scale", choices=studies.SCALES, default="quick",
                       help=f"quick (smaller sizes: {QUICK_MINUTES} minutes on a 2-core VM, each study's as `fsbench "
                       "study` lists it and its plan says) or paper (the study's own sizes)")
    study.add_argument("--plan", action="store_true", help="print the plan and stop")
    results = Path(DEFAULT_STORE).parent
    study.add_argument("-o", "--output", help=f"the report's HTML file (default: study-NAME.html beside the SQLite "
                       f"store, in {results}/ unless --store names another; with a postgresql:// --store, in {results}/ "
                       "of the current directory)")
    add_to_argparse(study, BY_FLAG["--alpha"])
    study.set_defaults(func=cmd_study, takes_pytest_args=True)
    rep = sub.add_parser("report", help="write a session as one self-contained HTML page with box plots, size "
                         "curves and, with --compare, a change table and forest plot")
    rep.add_argument("session", help="session id, token, baseline name or 'last'")
    rep.add_argument("--compare", metavar="BASE", help="baseline name, session id or 'last' to compare with "
                     "(default: a gated session's baseline, as its gate compared)")
    rep.add_argument("-o", "--output", default="report.html", help="HTML file to write (-: standard output; "
                     "default report.html)")
    rep.add_argument("--figures", metavar="DIR", help="also write each figure into DIR")
    rep.add_argument("--format", choices=("png", "svg"), default="svg", help="the figures' format in DIR")
    rep.add_argument("--force", action="store_true", help="replace an existing -o file or figure that fsbench did "
                     "not write (never a result store or another SQLite database)")
    rep.add_argument("--allowed", type=allowed_pct, metavar="PCT", help="draw this allowed change (e.g. 5%%) on "
                     "the forest plot")
    add_to_argparse(rep, BY_FLAG["--alpha"])
    add_to_argparse(rep, BY_FLAG["--store"])
    rep.set_defaults(func=cmd_report)
    export = sub.add_parser("export", help="write a session as JSON in pytest-benchmark's shape, or as a PTS result file")
    export.add_argument("session", help="session id, token, baseline name or 'last'")
    export.add_argument("--format", choices=("json", "pts"), default="json",
                        help="json (pytest-benchmark's shape) or pts (a Phoronix Test Suite composite.xml)")
    export.add_argument("-o", "--output", default="-", help="file to write (default: standard output)")
    export.add_argument("--pts-save", metavar="NAME",
                        help="with --format pts: save it as PTS's result file NAME, for show-result and upload")
    export.add_argument("--force", action="store_true", help="replace an existing result file of --pts-save, or an "
                        "existing -o file that fsbench did not write (never a result store or another SQLite "
                        "database)")
    export.add_argument("--suffix", nargs="?", const="", metavar="NAME",
                        help="with --format pts: append ' (NAME)' to every system identifier, so result files of "
                             "sessions with the same cases stay apart when PTS merges them (alone: the session's "
                             "baseline name, else 'session N')")
    add_to_argparse(export, BY_FLAG["--store"])
    export.set_defaults(func=cmd_export)
    upload = sub.add_parser("upload", help="upload a PTS result file to OpenBenchmarking.org with PTS's upload-result")
    upload.add_argument("result", help="the PTS result file's name (as in phoronix-test-suite list-saved-results)")
    upload.add_argument("--pts-binary", help="the phoronix-test-suite launcher (default: $FSBENCH_PTS, else PATH's)")
    upload.set_defaults(func=cmd_upload)
    profiles = sub.add_parser("profiles", help="list the PTS test profiles and suites fsbench carries")
    profiles.set_defaults(func=cmd_profiles)
    baseline = sub.add_parser("baseline", help="list the baselines and their sessions, or forget one")
    baseline.add_argument("--drop", metavar="NAME", help="forget baseline NAME (its sessions stay in the store)")
    add_to_argparse(baseline, BY_FLAG["--store"])
    baseline.set_defaults(func=cmd_baseline)
    docs_parser = sub.add_parser("docs", help="print the documentation's reference pages (options, workload "
                                 "parameters, filesystems), generated from fsbench's registries")
    docs_parser.add_argument("--write", type=Path, metavar="DIR", help="rewrite the generated pages in the site's "
                             "directory DIR (docs): the reference pages, and in a checkout the code's layers")
    docs_parser.set_defaults(func=cmd_docs)
    sessions = sub.add_parser("sessions", help="list the sessions in the store (id, token, start, status, host)")
    sessions.add_argument("--host", help="only the sessions of this machine (its hostname)")
    sessions.add_argument("--since", metavar="TIME", type=utc_time, help="only sessions started at or after this UTC date or time, "
                          "e.g. 2026-11-01 or 2026-11-01T12:00")
    sessions.add_argument("--until", metavar="TIME", type=utc_time, help="only sessions started before this UTC date or time")
    sessions.add_argument("--json", action="store_true", help="print the sessions as one JSON document")
    add_to_argparse(sessions, BY_FLAG["--store"])
    sessions.set_defaults(func=cmd_sessions)
    push = sub.add_parser("push", help="copy a session of this store into another, e.g. a machine's SQLite file "
                          "into the team's PostgreSQL store")
    push.add_argument("session", help="session id, token, baseline name or 'last' (in --store)")
    push.add_argument("--to", required=True, metavar="STORE", help="the store to copy into: postgresql://USER@HOST/DB "
                      "or an SQLite file")
    add_to_argparse(push, BY_FLAG["--store"])
    push.set_defaults(func=cmd_push)
    changed = sub.add_parser("changes", help="find the sessions where a case's headline median changed level "
                             "(change points over, e.g., a nightly job's sessions) and what "
                             "differed there: kernel, fs options, fsbench's commit")
    changed.add_argument("--host", help="the sessions of this machine (its hostname; default: this machine)")
    changed.add_argument("--all-hosts", action="store_true", help="every machine's sessions, each machine "
                         "its own series")
    changed.add_argument("--figure", metavar="FILE", help="also draw each changed series into FILE.svg or "
                         "FILE.png")
    changed.add_argument("--max-pvalue", default="0.005", metavar="P", help="keep a change point when its "
                         "t-test's p (Student's, two-sided, on the log medians) is below P (default 0.005)")
    changed.add_argument("--json", action="store_true", help="print the change points as one JSON document")
    add_to_argparse(changed, BY_FLAG["--store"])
    changed.set_defaults(func=cmd_changes)
    published = sub.add_parser("publish", help="write the store's history as a static site into DIR (python -m "
                               "http.server serves it): cases x hosts with each host's newest verdict and trend "
                               "line, a page per case and host with each session's medians, intervals, work counts "
                               "and change points, and the regressions and change points, newest first; again "
                               "later, only what changed is rewritten")
    published.add_argument("directory", metavar="DIR", help="the site's directory: new, empty, or one fsbench publish "
                           "wrote")
    published.add_argument("--reports", choices=("none", "newest", "all"), default="none", help="the sessions "
                           "whose report (as fsbench report writes it) the site gets, once each, linked from their "
                           "rows: none (default; a report takes seconds, more on a long history), each host's "
                           "newest, or every one")
    published.add_argument("--max-pvalue", default="0.005", metavar="P", help="as fsbench changes: keep a change "
                           "point when its t-test's p is below P (default 0.005)")
    add_to_argparse(published, BY_FLAG["--store"])
    published.set_defaults(func=cmd_publish)
    fleet_parser = sub.add_parser("fleet", help="run one fsbench session on each of Slurm's nodes into "
                                  "one store (sbatch --exclusive --no-requeue, one job per node), wait, and "
                                  "tell each node's job, Slurm state, session and verdicts (exit 0 only when "
                                  "every one completed and passed); fsbench fleet status JOBIDS reads them "
                                  "back (docs/fleet.md)")
    fleet_parser.add_argument("words", nargs="*", metavar="PYTEST-ARGS", help="after --: every node's pytest "
                              "arguments, e.g. -- --fs=ext4,btrfs -k dd; or: status JOBIDS")
    fleet_parser.add_argument("--nodes", metavar="NODE,...", help="the Slurm nodes to run a session on, one "
                              "each")
    fleet_parser.add_argument("--partition", help="the Slurm partition (default: Slurm's default one)")
    fleet_parser.add_argument("--constraint", metavar="FEATURE", help="only nodes with this Slurm feature, "
                              "e.g. nvme (Slurm refuses a listed node without it)")
    fleet_parser.add_argument("--time", metavar="LIMIT", help="each job's time limit, e.g. 2:00:00; a "
                              "session that reaches it ends TIMEOUT (default: the partition's)")
    fleet_parser.add_argument("--no-wait", action="store_true", help="submit, print the job ids and return")
    fleet_parser.add_argument("--shard", action="store_true", help="split the cases among the nodes (meant "
                              "for identical machines): node i of N runs the pytest session's --shard=i/N, "
                              "each case on exactly one node")
    fleet_parser.add_argument("--report", metavar="FILE", help="also write the nodes' results and hosts x "
                              "cases as one HTML page, once every job ended (and with fleet status)")
    fleet_parser.add_argument("--python", default=sys.executable, help="the Python of fsbench's virtual "
                              "environment, at the same path on every node (default: this one's, "
                              f"{sys.executable})")
    fleet_parser.add_argument("--workdir", default=".", metavar="DIR", help="where each session runs and "
                              "its job's output goes, the same path on every node (default: the current "
                              "directory)")
    add_to_argparse(fleet_parser, BY_FLAG["--store"])
    fleet_parser.set_defaults(func=cmd_fleet)
    bisect = sub.add_parser("bisect", help="find the commit of a kernel's git history that made the cases slower: "
                            "each step's kernel built and measured interleaved with the good and bad ones until the "
                            "gate's statistics decide (counts of the work first), the culprit confirmed against its "
                            "parent (docs/bisect.md)")
    bisect.add_argument("words", nargs="*", metavar="PYTEST-ARGS", help="after --: the cases' pytest arguments, "
                        "e.g. -- -k 'dd and write' --fs=ext4 --dd-size=128M")
    bisect.add_argument("--tree", help="the Linux kernel's git repository (read only: the bisect checks out in a "
                        "clone of its own)")
    bisect.add_argument("--good", metavar="REV", help="a commit without the regression (hash, tag or branch)")
    bisect.add_argument("--bad", metavar="REV", help="a later commit with it")
    bisect.add_argument("--kernel", choices=("uml", "vm"), default="uml", help="uml (a User-mode Linux kernel, make "
                        "ARCH=um; default) or vm (a bzImage booted in a virtual machine, KVM where there is one)")
    bisect.add_argument("--config", metavar="FILE", help="kernel options laid over fsbench's own (CONFIG_...=y "
                        "lines, or a whole .config); fsbench's: pytest_fsbench/bisect/uml.config or vm.config")
    bisect.add_argument("--fail-on-regression", dest="fsbench_fail_on_regression", action="append", default=[],
                        metavar="RULE", help="what counts as the regression, as the gate's rules: work:5%% (every "
                        "count of the work per byte moved), 5%% (every headline figure), dd.write:10%%, ...; "
                        "repeatable (default: work:5%%: a time figure needs many rounds, see docs/bisect.md)")
    bisect.add_argument("--alpha", dest="fsbench_alpha", default="0.05", metavar="ALPHA", help="one-sided level of each decision "
                        "over all its looks (default 0.05)")
    bisect.add_argument("--rounds", type=int, default=3, help="the first round each session is looked at (default 3)")
    bisect.add_argument("--max-rounds", type=int, default=10, help="a session's budget of rounds: an undecided step is "
                        "skipped, an undecided range names nothing (default 10)")
    bisect.add_argument("--confirm-rounds", type=int, default=10, help="rounds of the culprit against its parent "
                        "(default 10)")
    bisect.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="make -j (default: the CPUs, "
                        f"{os.cpu_count()} here)")
    bisect.add_argument("--work-dir", metavar="DIR", help="the bisect's checkout, build directory and kernels, kept "
                        "for later bisects (default: one per tree, kind and config under /var/tmp/fsbench-bisect)")
    bisect.add_argument("--plan", action="store_true", help="say the steps, builds and measuring time it expects, "
                        "and stop")
    bisect.add_argument("--resume", nargs="?", const="last", metavar="N", help="continue bisect N (default: the "
                        "newest unfinished one), its kernels and verdicts kept; a finished one: say its result again")
    bisect.add_argument("--list", action="store_true", help="list the store's bisects")
    bisect.add_argument("--report", metavar="FILE", help="write the bisect's page: the range as a line of commits, "
                        "each step's verdict and figure")
    bisect.add_argument("--force", action="store_true", help="let --report replace a file fsbench did not write")
    add_to_argparse(bisect, BY_FLAG["--store"])
    bisect.set_defaults(func=cmd_bisect)
    for command in sub.choices.values():
        command.set_defaults(command_parser=command)
    return top


class OneLineParser(argparse.ArgumentParser):
    """argparse's own errors (an unknown option, a bad choice) as one line, as fsbench's are."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} ({self.prog} --help shows the usage)\n")


def check_given(command: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """An option given an empty value is a usage error, never the option left out (issue 23:
    baseline --drop= listed the baselines, export --pts-save= wrote no PTS file)."""
    for action in command._actions:  # argparse has no public list of a parser's options
        if action.option_strings and getattr(args, action.dest, None) == "" and action.const != "":
            raise UsageError(f"{action.option_strings[-1]}='': give a value or leave the option out")


def check_once(command: argparse.ArgumentParser, argv: list[str]) -> None:
    """An option of one value given twice is a usage error, never silently the last (issue 34:
    baseline --drop=nosuch --drop=base forgot only base); -o and --output are one option."""
    single = [action for action in command._actions  # argparse has no public list of a parser's options
              if action.option_strings and isinstance(action, argparse._StoreAction)]
    spelled = {flag: action.option_strings[-1] for action in single for flag in action.option_strings}
    words = []
    for arg in argv:
        flag, eq, value = arg.partition("=")
        words.append(spelled[flag] + eq + value if flag in spelled else arg)
    twice = given_twice(words, {action.option_strings[-1] for action in single})
    if twice:
        raise UsageError(twice)


def check_home(argv: list[str]) -> None:
    """A value whose '~' the shell left alone (after '=' it expands none) is a usage error naming
    it, never a directory named '~' (issue 44); pytest's options of a study are the plugin's to
    check, with the same words."""
    for arg in argv:
        if arg == "--":
            break
        flag, eq, value = arg.partition("=")
        home = unexpanded_home(value) if eq and flag.startswith("-") else None
        if home:
            raise UsageError(f"{flag}={value}: {home}")


def main(argv: list[str] | None = None) -> int:
    cli = parser()
    args, extra = cli.parse_known_args(argv)
    if extra and not getattr(args, "takes_pytest_args", False):
        args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.pytest_args = extra
    try:
        check_once(args.command_parser, sys.argv[1:] if argv is None else argv)
        check_given(args.command_parser, args)
        check_home(sys.argv[1:] if argv is None else argv)
        return args.func(args)
    except UsageError as exc:  # one line, as every error (the terminal wraps it)
        print(f"fsbench {args.command}: {exc}", file=sys.stderr)
        return 2
    except FsbenchError as exc:
        print(f"fsbench {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    from pytest_fsbench import console_main

    sys.exit(console_main())
