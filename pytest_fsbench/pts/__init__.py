"""Everything about the Phoronix Test Suite, fsbench's second face: PTS runs fsbench's test
profiles (test-profiles/, shipped as pytest_fsbench.pts_profiles) on the targets fsbench builds,
and reads fsbench's sessions as its own result files.

- profiles.py: the profiles and suites, and what fsbench knows of each (options, quick values,
  the base profile the others extend) read from their XML; copying them into PTS's repository
- launcher.py: finding PTS, its user directory, result file names
- options.py: the --pts-* values (their rows are in settings.OPTIONS) as the session's PtsSettings
- workload.py: a profile as a workload, installed on the case's target
- fixture.py: the pytest plugin with the pts_workload fixture (entry point fsbench_pts)
- results.py: PTS's result files read, and their results as fsbench metrics
- export.py: a session written as a PTS result file
- commands.py: the bodies of `fsbench export --format pts`, `upload` and `profiles`

The profiles' run scripts share one preamble, test-profiles/fsbench-base-1.0.0 (PTS's cascading
test profiles: each profile names it in Extends).

It stands beside views/ (a session written as PTS's result file is a view) and may import
views/, verdicts/, measure/ (a profile is measured as a workload), targets/, store/ and the ground.
"""
