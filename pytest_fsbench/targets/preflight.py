"""Values only a tool can judge, asked once before anything is measured: a case's filesystem
options (mkfs arguments, mount options, ZFS properties the implementation may lack) are tried by
building the case's target once on small scratch images with the same commands, and torn down.
A tool that rejects them is one usage error naming the value and the tool's own message, instead
of a failure in every case (issue 23). Which cases to ask and how to word the answer are pure;
Targets.preflight builds."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..case import CaseSpec
from ..errors import CommandError, FsbenchError

#: words of a line that says what went wrong (zpool's "Defaulting to 4K blocksize" says nothing)
_COMPLAINT = re.compile(r"invalid|unknown|unrecogni[sz]ed|cannot|must|bad|wrong|error|not |no such|illegal|"
                        r"too (?:many|few|large|small)|unsupported|missing", re.I)


def to_try(specs: Iterable[CaseSpec]) -> list[CaseSpec]:
    """One case per filesystem and set of options that a user gave (fsbench's own defaults are
    known good), on the host's kernel, with the fewest devices among the session's layouts for
    it: the tools see the same arguments a measured case gives them."""
    chosen: dict[tuple, CaseSpec] = {}
    for spec in specs:
        if not spec.options or spec.in_guest:
            continue
        key = (spec.fs, spec.options)
        if key not in chosen or spec.devices_needed < chosen[key].devices_needed:
            chosen[key] = spec
    return list(chosen.values())


def tool_message(output: str) -> str:
    """What a tool said was wrong: its lines before a usage text, those that complain (all of
    them when none does), joined; its usage text and notes left out."""
    lines = []
    for line in output.splitlines():
        if re.match(r"\s*usage\b", line, re.I):
            break
        if line.strip() and not line[0].isspace():
            lines.append(line.strip())
    complaints = [line for line in lines if _COMPLAINT.search(line)]
    return "; ".join(complaints or lines) or "no message"


def rejected(spec: CaseSpec, option: str, failure: CommandError) -> str:
    """The usage error of a case whose options a tool rejected (option: where they were given,
    --fs-opt or --paired)."""
    values = " ".join(f"{spec.fs}:{key}={value}" for key, value in spec.options)
    tool = failure.argv[0] if failure.argv else "a tool"
    return (f"{option} {values}: {tool} rejects it ({failure.reason or f'exit status {failure.returncode}'}): "
            f"{tool_message(failure.output)}; fix or drop the value (tried on a scratch image before anything was "
            "measured; nothing is left of it)")


def build_failure(case_id: str, error: FsbenchError) -> str:
    """One line for a case whose target could not be built (where no preflight asked first: a guest
    kernel's case): the tool and its own words."""
    head = f"{case_id}: the target could not be built: "
    if isinstance(error, CommandError):
        status = error.reason or f"exit status {error.returncode}"
        return f"{head}{error.argv[0]} failed ({status}): {tool_message(error.output)}"
    return head + (str(error).splitlines()[0] if str(error) else type(error).__name__)
