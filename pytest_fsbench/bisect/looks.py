"""The session side of a bisect's step: a pytest plugin (`-p pytest_fsbench.bisect.looks`) that
looks at the session's runs after every round from the first look on and, once the step (or the
range) is decided, skips the rounds left, saying so: the session ends complete, its runs in the
store, as soon as it knows. What to decide comes from `fsbench bisect` in FSBENCH_BISECT_LOOKS (a
JSON document: the kind, each kernel's role, the rules, alpha, the looks and the deciding figures).

It also reads a session's runs as the bisect's figures (figures()), for the bisect itself."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from ..plugin import SESSION
from ..store.results import Series
from ..terminal import is_case
from ..verdicts.bisection import NOT_YET, Figure, check_range, check_step
from ..verdicts.gate import parse_rule

LOOKS = "FSBENCH_BISECT_LOOKS"
RANGE, STEP, CONFIRM = "range", "step", "confirm"
_ROUND = re.compile(r"-round(\d+)\]$")


@dataclass(frozen=True)
class Request:
    """What a step's session decides, as `fsbench bisect` asks it."""

    kind: str  # RANGE or STEP (CONFIRM runs its rounds without looking)
    roles: dict[str, str]  # kernel label -> role (good, bad, step)
    rules: tuple[str, ...]
    alpha: float
    looks: tuple[int, ...]
    deciding: tuple[tuple[str, str, str], ...] = ()

    def text(self) -> str:
        return json.dumps({"kind": self.kind, "roles": self.roles, "rules": list(self.rules), "alpha": self.alpha,
                           "looks": list(self.looks), "deciding": [list(key) for key in self.deciding]})

    @classmethod
    def parse(cls, text: str) -> Request:
        found = json.loads(text)
        return cls(found["kind"], dict(found["roles"]), tuple(found["rules"]), float(found["alpha"]),
                   tuple(found["looks"]), tuple(tuple(key) for key in found.get("deciding", ())))

    def check(self) -> Callable[[list[Figure]], object]:
        rules = [parse_rule(rule) for rule in self.rules]
        if self.kind == RANGE:
            return lambda figures: check_range(figures, rules, self.alpha, self.looks)
        return lambda figures: check_step(figures, self.deciding, rules, self.alpha, self.looks)


def role_of(case_id: str, roles: dict[str, str]) -> tuple[str, str] | None:
    """(role, the case id without its kernel) of a case measured under one of the roles' kernels."""
    for label, role in roles.items():
        if case_id.startswith(label + "-"):
            return role, case_id[len(label) + 1:]
    return None


def figures(series: Sequence[Series], roles: dict[str, str]) -> list[Figure]:
    """A session's series as figures: each case's metric with its runs under each role's kernel
    (cases under other kernels left out)."""
    grouped: dict[tuple[str, str, str], dict] = {}
    for s in series:
        found = role_of(s.case_id, roles)
        if found is None:
            continue
        role, bare = found
        case = s.key.test.rpartition("::")[2].replace(s.case_id, bare)
        entry = grouped.setdefault((case, s.key.metric, s.key.params), {"unit": s.unit, "direction": s.direction,
                                                                      "runs": {}})
        entry["runs"][role] = s.values
    return [Figure(case, metric, params, entry["unit"], entry["direction"], tuple(sorted(entry["runs"].items())))
            for (case, metric, params), entry in grouped.items()]


def missing_roles(found: Sequence[Figure], roles: dict[str, str]) -> list[str]:
    """The roles whose kernel measured nothing in the session so far."""
    measured = {role for figure in found for role, values in figure.runs if values}
    return sorted(set(roles.values()) - measured)


class Looks:
    """After each round at or past the first look: decided? Then every later test is skipped."""

    def __init__(self, request: Request, config: pytest.Config) -> None:
        self.request = request
        self.config = config
        self.check = request.check()
        self.rounds: dict[int, set[str]] = {}
        self.done: set[str] = set()
        self.stopped: str | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            match = _ROUND.search(item.nodeid)
            if is_case(item) and match:
                self.rounds.setdefault(int(match.group(1)), set()).add(item.nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.stopped is not None and is_case(item):
            pytest.skip(self.stopped)

    def pytest_runtest_logfinish(self, nodeid: str, location) -> None:
        self.done.add(nodeid)
        for number, nodeids in sorted(self.rounds.items()):
            if nodeid in nodeids and nodeids <= self.done and self.stopped is None:
                self.look(number)

    def look(self, number: int) -> None:
        session = self.config.stash.get(SESSION, None)
        if session is None or not session.recorded:
            return
        found = figures(session.store.series(session.session_id), self.request.roles)
        absent = missing_roles(found, self.request.roles)
        if absent:
            self.stopped = (f"fsbench bisect: the {', '.join(absent)} kernel measured nothing in round {number}, "
                            "so the step cannot be decided; the rounds left are not run")
            return
        if number not in self.request.looks:
            return
        try:
            result = self.check([figure.upto(number) for figure in found])
        except ValueError as exc:
            self.stopped = f"fsbench bisect: {exc}; the rounds left are not run"
            return
        if result.verdict != NOT_YET:
            self.stopped = f"fsbench bisect: decided after round {number} ({result.verdict}); the rounds left are not run"


def pytest_configure(config: pytest.Config) -> None:
    text = os.environ.get(LOOKS)
    if text:
        config.pluginmanager.register(Looks(Request.parse(text), config), "fsbench-bisect-looks")
