"""A Linux kernel build on the target (the compression study's `make defconfig; time make`).

    pytest --fs=btrfs,zfs -k kernel --kernel-config=defconfig

Only the build is timed: extracting the source and `make <config>` are unmeasured.
"""

import pytest

from pytest_fsbench.workloads.kernel_build import KernelBuild, availability_errors, default_jobs, find_kernel_source


@pytest.mark.slow
def test_kernel_build(fsbench, kernel_config, kernel_jobs):
    source = find_kernel_source()
    reasons = availability_errors(source)
    if reasons:
        pytest.skip("; ".join(reasons))
    fsbench.own_data("the kernel build")
    fsbench.run(KernelBuild(source=source, config=kernel_config, jobs=int(kernel_jobs) or default_jobs()))
