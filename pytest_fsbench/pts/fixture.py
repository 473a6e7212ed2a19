"""The PTS face's pytest plugin (entry point fsbench_pts): the `pts_workload` fixture that
benchmarks/test_pts.py measures, one case per target. Its options (--pts-*) are rows of
settings.OPTIONS, parsed into the session's Settings.pts.
"""

from __future__ import annotations

import datetime as dt

import pytest

from .export import composite_xml
from .launcher import MISSING_REASON, find_pts, result_file, user_path
from .profiles import install_definitions
from .workload import PtsWorkload


@pytest.fixture
def pts_workload(fsbench):
    """--pts-profile as a workload on this case's target (skips when PTS is absent). After the
    case, the session's cases so far are written into its PTS result file (--pts-result, else
    fsbench-<session start>), where PTS shows, merges and uploads them."""
    session = fsbench.session
    settings = session.settings.pts
    launcher = find_pts(settings.binary)
    if launcher is None:
        pytest.skip(MISSING_REASON)
    user = user_path()
    install_definitions(user, system_tools=settings.system_tools)
    yield PtsWorkload(
        pts=launcher, profile=settings.profile, version=settings.version, options=settings.options,
        choices=settings.choices, identifier=fsbench.target.id,
        description=f"fsbench session of {session.started}: {' '.join(session.settings.args)}"[:400],
        user=user, system_tools=settings.system_tools)
    stamp = dt.datetime.fromisoformat(session.started).strftime("%Y%m%d-%H%M%S")
    name = settings.result or f"fsbench-{stamp}"
    composite = result_file(name, user)
    composite.parent.mkdir(parents=True, exist_ok=True)
    composite.write_bytes(composite_xml(session.store, session.session_id, title=name))
