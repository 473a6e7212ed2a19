"""A fleet's HTML page (`fsbench fleet --report=FILE`): each node's job, Slurm state, session and
what went wrong, then hosts x cases with each verdict, in the session report's style. Plain
values in, one self-contained page out: fleet.py gathers them from Slurm and the store."""

from __future__ import annotations

from collections.abc import Sequence

from ..options import output_mark
from .report import STYLE, _e, _table

NODE_HEADER = ["node", "job", "Slurm state", "session", "what went wrong", "the job's output"]


def bad(row: Sequence[str]) -> bool:
    """A case row where some host failed the test or the gate found a regression."""
    return any(word in ("failed", "regression") for value in row[1:] for word in value.split())


def page(title: str, nodes: Sequence[Sequence[str]], failed: Sequence[bool], header: Sequence[str],
         rows: Sequence[Sequence[str]], history: Sequence[str] = ()) -> str:
    """nodes: a row per node as NODE_HEADER, failed: whether each did not pass; header and rows:
    hosts x cases ('-': the host did not report the case); history: each host's change points, as
    fsbench changes prints them."""
    passed = sum(1 for f in failed if not f)
    body = [f"<h1>{_e(title)}</h1>",
            f"<p>{passed} of {len(nodes)} node{'s' * (len(nodes) != 1)} completed and passed.</p>",
            _table(NODE_HEADER, [list(n) for n in nodes], ["worse" if f else "" for f in failed]),
            "<h2>Hosts × cases</h2>"]
    if rows:
        classes = ["worse" if bad(r) else "" for r in rows]
        body += [_table(list(header), [list(r) for r in rows], classes),
                 "<p class='note'>Each host's outcome of the test and the gate's verdicts on it "
                 "(regression, within bounds, inconclusive), and the work it did (device bytes per byte written, "
                 "flushes f and commits c per GB written: hosts of one kind do the same work); -: the host did "
                 "not report the test. A coloured row: some host failed it.</p>"]
    else:
        body.append("<p>No node's session reported a test.</p>")
    if history:
        body += ["<h2>Change points per host</h2>", "<pre>" + _e("\n".join(history)) + "</pre>",
                 "<p class='note'>Where each host's series of session medians changed level, in the cases this "
                 "fleet ran (fsbench changes --host HOST).</p>"]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='generator' content='{output_mark('report')}'>"
            f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>" + "\n".join(body)
            + "</body></html>\n")
