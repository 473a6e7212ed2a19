"""A Linux kernel build on the target (the compression study's `make defconfig; time make`).

    pytest --fs=btrfs,zfs -k kernel --kernel-config=defconfig

Only the build is timed: extracting the source and `make <config>` are unmeasured. Without a
kernel source tarball or GNU time the case skips before its target is built.
"""

import pytest

from pytest_fsbench.workloads.kernel_build import KernelBuild, default_jobs, find_kernel_source


@pytest.mark.slow
@pytest.mark.fsbench_own_data("the kernel build")
def test_kernel_build(fsbench, kernel_config, kernel_jobs):
    fsbench.measure(KernelBuild(source=find_kernel_source(), config=kernel_config,
                            jobs=int(kernel_jobs) or default_jobs()))
