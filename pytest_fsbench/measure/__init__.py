"""One measured run: preparing its data, the cache policy, the workload's phases and the
counters read around them (run.py: `measure_run`), what else used the machine meanwhile
(monitor.py), whether a figure came from the storage or the page cache (cache_check.py) and the
session's progress lines (progress.py). It may import targets/, workloads/, filesystems/, store/
and the ground; it decides nothing (verdicts/ does)."""
