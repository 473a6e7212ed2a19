"""Ordering assertions over cases measured earlier in the session (this file runs after the
dd cases). Each asks for a significant difference, not just a bigger median; one whose cases
this session's --fs/--layout/--fs-opt do not make is deselected.

    pytest benchmarks/test_dd.py benchmarks/test_ordering.py -k write --fs=zfs --data=zeros \
        --fs-opt zfs:compression=off --fs-opt zfs:compression=gzip

Add your own: ("dd.write", "test_dd_write", "btrfs-raid10", "ext4-single") asserts that btrfs
raid10 writes significantly faster than ext4 on one disk.
"""

import pytest

from pytest_fsbench.verdicts.assertions import assert_better

ORDERINGS = [
    # (metric, test contains, expected better case, expected worse case)
    ("dd.write", "test_dd_write", "zfs-single-compression=gzip", "zfs-single-compression=off"),
]


@pytest.mark.parametrize("metric, test, better, worse", [
    pytest.param(*ordering, marks=pytest.mark.fsbench_cases(ordering[2], ordering[3])) for ordering in ORDERINGS])
def test_ordering(fsbench_results, metric, test, better, worse):
    good, direction, unit = fsbench_results.samples(better, metric, test)
    bad, _, _ = fsbench_results.samples(worse, metric, test)
    if not good or not bad:
        pytest.skip(f"needs {metric} of {better} and {worse} measured earlier in this session")
    assert_better(metric, (better, good), (worse, bad), direction, unit)
