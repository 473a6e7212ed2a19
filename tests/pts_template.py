"""Helpers for testing the PTS face: PTS's schemas, and the part of PTS's results parser the
fsbench profiles use, to check their results-definition files against real tool output without
PTS: the line is found by LineHint (the first line
containing it) or LineBeforeHint (the line after the first line containing it); the value is
the whitespace token at #_RESULT_#'s position in the template; StripResultPostfix and
DivideResultBy apply. The PTS integration tests run the same profiles through PTS itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lxml import etree

from pytest_fsbench.pts import launcher


def schema_dir() -> Path | None:
    """PTS's XML schemas (PTS's own files, so not part of fsbench): $FSBENCH_PTS_SCHEMAS, or the
    installed PTS's."""
    candidates = [os.environ.get("FSBENCH_PTS_SCHEMAS")]
    found_launcher = launcher.find_pts()
    tree = launcher.install_dir(found_launcher) if found_launcher else None
    if tree:
        candidates.append(tree / "pts-core" / "openbenchmarking.org" / "schemas")
    for candidate in candidates:
        if candidate and (Path(candidate) / "test-profile.xsd").is_file():
            return Path(candidate)
    return None


def schema(name: str) -> etree.XMLSchema:
    """One of PTS's schemas; skips the test when none can be found."""
    found = schema_dir()
    if found is None:
        pytest.skip("PTS's XML schemas not found: set FSBENCH_PTS_SCHEMAS to a directory holding "
                    "test-profile.xsd (PTS ships them in pts-core/openbenchmarking.org/schemas)")
    return etree.XMLSchema(etree.parse(str(found / name)))


def parsers(results_definition: str) -> list[dict[str, str]]:
    doc = etree.parse(results_definition)
    return [{child.tag: (child.text or "") for child in p} for p in doc.iter("ResultsParser")]


def value(parser: dict[str, str], output: str) -> float | None:
    lines = output.splitlines()
    line = None
    if parser.get("LineHint"):
        line = next((ln for ln in lines if parser["LineHint"] in ln), None)
    elif parser.get("LineBeforeHint"):
        index = next((i for i, ln in enumerate(lines) if parser["LineBeforeHint"] in ln), None)
        line = lines[index + 1] if index is not None and index + 1 < len(lines) else None
    if line is None:
        return None
    template_line = next(t for t in parser["OutputTemplate"].splitlines() if "#_RESULT_#" in t)
    position = template_line.split().index("#_RESULT_#")
    tokens = line.split()
    if position >= len(tokens):
        return None
    token = tokens[position]
    postfix = parser.get("StripResultPostfix")
    if postfix and token.endswith(postfix):
        token = token[: -len(postfix)]
    try:
        number = float(token)
    except ValueError:
        return None
    return number / float(parser.get("DivideResultBy") or 1)


def matching(parsers_: list[dict[str, str]], arguments: str) -> list[dict[str, str]]:
    """The parsers PTS applies for these arguments (MatchToTestArguments is a substring test)."""
    return [p for p in parsers_ if not p.get("MatchToTestArguments") or p["MatchToTestArguments"] in arguments]
