"""A bisect's HTML page (`fsbench bisect --report=FILE`): the range as a line of commits, the good
endpoint first, each commit coloured by its step's verdict with the step's number and figure
under it; then the steps' table (verdict, figure, rounds, build, boot and measuring minutes, the
session that measured it) and the result. Plain values in, one self-contained page out:
bisect/run.py gathers them from the bisect's record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..options import output_mark
from .report import STYLE, _e, _table

#: a commit's colour by what the bisect found of it
VERDICT_CLASS = {"good": "good", "like good": "good", "bad": "bad", "like bad": "bad", "skip": "skip",
                 "culprit": "culprit"}
LINE_STYLE = """
.line { display: flex; flex-wrap: wrap; gap: 4px; margin: 1em 0 }
.commit { border: 1px solid #bbb; border-radius: 4px; padding: 4px 6px; min-width: 7.5em; max-width: 11em;
  font-size: 12px; background: #fafafa }
.commit .sha { font-family: monospace; font-weight: bold }
.commit .subject { color: #444; line-height: 1.3em; height: 3.9em; overflow: hidden }
.commit .figure { font-variant-numeric: tabular-nums } .commit.good { background: #e8f6e8; border-color: #7c7 }
.commit.bad { background: #fde8e8; border-color: #d77 } .commit.skip { background: #eee; color: #777 }
.commit.culprit { background: #f8c8c8; border: 2px solid #b00 } .commit .step { color: #555 }
"""


@dataclass(frozen=True)
class CommitBox:
    """One commit of the line: its hash, subject, what was found (good, bad, skip, culprit or ""
    for untested), and the step that measured it with its figure."""

    sha: str
    subject: str
    found: str
    step: str = ""
    figure: str = ""


def answer(result: Sequence[str]) -> str:
    """The page's first lines: what the bisect found (its result's first line and how it was
    confirmed), red when it named a commit, amber when that commit is not confirmed or nothing
    could be told; nothing while the bisect has no result."""
    said = [line.strip() for line in result[:2] if line.strip() and not line.strip().startswith("how sure")]
    if not said:
        return ""
    kind = ("worse" if said[0].startswith("first bad commit") and not any("NOT confirmed" in s for s in said)
            else "better" if said[0].startswith("no regression") else "undecided")
    return "<div class='answer'><ul>" + "".join(f"<li class='{kind}'>{_e(s)}</li>" for s in said) + "</ul></div>"


def page(title: str, intro: Sequence[str], boxes: Sequence[CommitBox], header: Sequence[str],
         rows: Sequence[Sequence[str]], classes: Sequence[str], result: Sequence[str], times: str) -> str:
    line = "".join(
        f"<div class='commit {VERDICT_CLASS.get(box.found, '')}' title='{_e(box.sha)}'>"
        f"<div class='sha'>{_e(box.sha[:12])}</div><div class='subject'>{_e(box.subject)}</div>"
        f"<div class='step'>{_e(box.step or 'not measured')}{': ' + _e(box.found) if box.found else ''}</div>"
        f"<div class='figure'>{_e(box.figure)}</div></div>" for box in boxes)
    body = [f"<h1>{_e(title)}</h1>", answer(result), *[f"<p>{_e(text)}</p>" for text in intro],
            "<h2>The range</h2>", f"<div class='line'>{line}</div>",
            "<p class='note'>Oldest first: the good endpoint, then each commit up to the bad one. Green: like the good "
            "kernel; red: like the bad one; grey: skipped (it did not build, boot or decide); the first bad commit "
            "outlined. Under each: the step that measured it and its deciding figure's median under the good, this "
            "and the bad kernel.</p>",
            "<h2>Steps</h2>", _table(list(header), [list(r) for r in rows], list(classes)),
            "<h2>Result</h2>", "<pre>" + _e("\n".join(result)) + "</pre>", f"<p class='note'>{_e(times)}</p>"]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='generator' content='{output_mark('report')}'>"
            f"<title>{_e(title)}</title><style>{STYLE}{LINE_STYLE}</style></head><body>" + "\n".join(body)
            + "</body></html>\n")
