"""Every fs x layout this machine supports is built for real on loop devices, written, read and
torn down; the ones it cannot build are skipped with the driver's own reason."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pytest_fsbench.metrics import is_headline
from pytest_fsbench.case import LAYOUT_DEVICES, CaseSpec
from pytest_fsbench.filesystems import FILESYSTEMS
from pytest_fsbench.filesystems import driver
from pytest_fsbench.kernels.probe import probe
from pytest_fsbench.measure.run import measure_run
from pytest_fsbench.session import FsbenchSession
from pytest_fsbench.settings import Settings
from pytest_fsbench.system.commands import execute
from pytest_fsbench.workloads.dd import DdRead, DdWrite

pytestmark = pytest.mark.root

# what each layout must look like once built: btrfs's data profile, zpool's vdev names
BTRFS_DATA = {"single": "Data, single", "raid0": "Data, RAID0", "raid1": "Data, RAID1",
              "raid10": "Data, RAID10", "raid5": "Data, RAID5"}
ZPOOL_VDEVS = {"single": [], "raid0": [], "raid1": ["mirror-0"], "raid10": ["mirror-0", "mirror-1"],
               "raid5": ["raidz1-0"]}


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    specs = tuple(CaseSpec(fs, layout) for fs in FILESYSTEMS for layout in LAYOUT_DEVICES)
    settings = Settings(FILESYSTEMS, tuple(LAYOUT_DEVICES), specs,
                        image_dir=tmp_path_factory.mktemp("images"), image_size=512 << 20)
    fsbench = FsbenchSession(settings, probe(), execute, run_root=tmp_path_factory.mktemp("run"))
    yield fsbench
    fsbench.close()


def fstype(mountpoint: Path) -> str:
    return execute(["findmnt", "-n", "-o", "FSTYPE", str(mountpoint)]).stdout.strip()


def check_layout(spec: CaseSpec, target) -> None:
    if spec.fs == "btrfs":
        assert BTRFS_DATA[spec.layout] + ":" in execute(["btrfs", "filesystem", "df", str(target.mountpoint)]).stdout
    elif spec.fs == "zfs":
        status = execute(["zpool", "status", target.context.name]).stdout
        vdevs = [line.split()[0] for line in status.splitlines() if line.strip().startswith(("mirror-", "raidz1-"))]
        assert vdevs == ZPOOL_VDEVS[spec.layout]
        assert status.count("/dev/loop") + status.count(" loop") == spec.devices_needed


@pytest.mark.parametrize("layout", list(LAYOUT_DEVICES))
@pytest.mark.parametrize("fs", FILESYSTEMS)
def test_build_write_read_teardown(session, fs, layout, no_leftovers):
    spec = CaseSpec(fs, layout)
    fs_driver = driver(fs, session.host)
    reasons = fs_driver.unavailable(spec, session.host)
    if reasons:
        pytest.skip("; ".join(reasons))
    # the kernel's name for it; ZFS's is its implementation's (zfs, or fuse.zfs for zfs-fuse)
    expected = fs_driver.kernel_name or ("fuse" if session.host.zfs_impl == "zfs-fuse" else fs)
    with session.target(spec) as target:
        assert fstype(target.mountpoint).startswith(expected)
        assert len(target.devices) == spec.devices_needed
        assert all(d.direct_io for d in target.devices), "loop devices must use direct I/O"
        check_layout(spec, target)
        write = measure_run(DdWrite(total_size="32M"), target, execute).metrics
        read = measure_run(DdRead(total_size="32M"), target, execute).metrics
        assert [m.name for m in write if m.unit == "MB/s" and is_headline(m.name)] == ["dd.write"]
        assert write[0].value > 0 and read[0].value > 0 and read[0].name == "dd.read"
        # what dd wrote reached the member devices (at least once; RAID writes more)
        disk_write = next(m.value for m in write if m.name == "disk.write")
        assert disk_write >= 32 * 1.048576 * (0.5 if fs == "zfs" else 1.0)
        assert target.manifest["applied"]["version"]
        mountpoint, images = target.mountpoint, [d.backing_file for d in target.devices]
    assert not mountpoint.exists()
    assert not any(Path(image).exists() for image in images)


def test_failed_build_is_undone(session, no_leftovers):
    """mkfs.btrfs refuses raid10 on 4 devices of which it cannot use one: simulate with a bad
    mkfs option so the build fails after the loop devices exist; they must all be gone."""
    spec = CaseSpec("btrfs", "raid1", (("mkfs", "--no-such-option"),))
    with pytest.raises(Exception, match="mkfs.btrfs"):
        with session.target(spec):
            pass
    listing = json.loads(execute(["losetup", "--json", "--list"]).stdout or "{}")
    assert not [e for e in listing.get("loopdevices", []) if str(session.settings.image_dir) in (e.get("back-file") or "")]


def test_zfs_cache_eviction_keeps_the_data(session, no_leftovers):
    spec = CaseSpec("zfs", "raid1")
    if driver("zfs", session.host).unavailable(spec, session.host):
        pytest.skip("no ZFS here")
    with session.target(spec) as target:
        (target.mountpoint / "kept").write_text("still here")
        target.evict_caches(execute)
        assert (target.mountpoint / "kept").read_text() == "still here"
        assert subprocess.run(["zpool", "list", target.context.name], capture_output=True).returncode == 0


def test_mount_options_are_stored_and_exported_as_the_kernel_applied_them(tmp_path, no_leftovers):
    """Issue 44: ext4:mount=data=journal,dioread_nolock ran as nodioread_nolock,nodelalloc,data=journal,
    and the export's mounted_options said data=journal,dioread_nolock."""
    import sys

    from conftest import execute_pytest

    repo = Path(__file__).resolve().parents[2]
    store = tmp_path / "fsbench.db"
    done = execute_pytest(["benchmarks/test_dd.py", "-k", "write", "--fs=ext4",
                           "--fs-opt=ext4:mount=data=journal,dioread_nolock", "--dd-size=4M", "--runs=1",
                           "--warmup=0", f"--image-dir={tmp_path / 'images'}", "--image-size=512M",
                           f"--store={store}"], cwd=repo)
    assert done.returncode == 0, done.stdout[-3000:]
    exported = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "export", "last", f"--store={store}"],
                              capture_output=True, text=True, check=True).stdout
    manifest = json.loads(exported)["benchmarks"][0]["extra_info"]["manifest"]
    kernel = manifest["applied"]["mount"].split()[-1].split(",")
    mounted = manifest["mounted_options"]["mount"].split(",")
    assert "nodioread_nolock" in kernel and "dioread_nolock" not in mounted  # as the kernel applied it, not as asked
    assert set(mounted) == set(kernel) - {"rw", "relatime"}
