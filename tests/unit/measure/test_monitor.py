
import psutil
import pytest

from pytest_fsbench.measure.monitor import Snapshot, cpu_metrics, disk_metrics


def cpu(**fields):
    names = psutil.cpu_times()._fields
    return psutil.cpu_times().__class__(**{n: fields.get(n, 0.0) for n in names})


def test_cpu_and_disk_deltas():
    before = Snapshot(cpu(user=10, system=5, idle=100, iowait=1), {"loop0": (0, 0, 0, 0), "loop1": (10, 10, 1, 1)})
    after = Snapshot(cpu(user=40, system=25, idle=130, iowait=11), {"loop0": (2_000_000, 0, 5, 0),
                                                                      "loop1": (1_000_010, 3_000_010, 3, 8)})
    assert {m.name: round(m.value, 3) for m in cpu_metrics(before, after)} == {
        "cpu.user": 33.333, "cpu.system": 22.222, "cpu.iowait": 11.111}
    assert {m.name: m.value for m in disk_metrics(before, after)} == {
        "disk.read": 3.0, "disk.write": 3.0, "disk.read_ops": 7.0, "disk.write_ops": 7.0}


def test_the_tools_own_cpu_is_its_childrens_over_the_wall_time():
    import psutil

    from pytest_fsbench.measure.monitor import snapshot, tool_cpu
    from pytest_fsbench.system.commands import execute

    before = snapshot([])
    execute(["python3", "-c", "sum(range(30_000_000))"])
    after = snapshot([])
    [metric] = tool_cpu([(before, after)])
    assert metric.name == "cpu.tool" and metric.unit == "%"
    # one busy process: at most one CPU's worth, and it did burn CPU
    assert 0 < metric.value <= 100.0 / (psutil.cpu_count() or 1) * 1.05


def test_others_cpu_is_the_busy_time_less_fsbenchs_and_its_childrens():
    from pytest_fsbench.measure.monitor import others_cpu

    # 2 CPUs for 10 s: 20 CPU-seconds, 14 of them busy; 3 were the measured command's, 1 fsbench's
    before = Snapshot(cpu(user=0, system=0, idle=0, iowait=0), {}, children=0.0, own=0.0)
    after = Snapshot(cpu(user=10, system=4, idle=5, iowait=1), {}, children=3.0, own=1.0)
    [metric] = others_cpu([(before, after)])
    assert (metric.name, metric.unit, round(metric.value, 6)) == ("cpu.others", "%", 50.0)
    # the kernel's threads (writeback, journal, loop workers) and interrupts serve the target too
    kernel = Snapshot(cpu(user=10, system=4, idle=5, iowait=1, softirq=2), {}, children=3.0, own=1.0,
                      kernel=2.0)
    assert others_cpu([(before, kernel)])[0].value == pytest.approx(100.0 * 8 / 22)
    # this process and its children busier than the counters say (rounding): never below zero
    greedy = Snapshot(cpu(user=1, idle=19), {}, children=5.0)
    assert others_cpu([(before, greedy)])[0].value == 0.0


def test_others_disk_is_the_disks_bytes_less_the_members():
    from pytest_fsbench.measure.monitor import others_disk

    before = Snapshot(cpu(), {"loop0": (0, 0, 0, 0)}, wall=10.0, under={"vda": (1_000_000, 5_000_000)})
    after = Snapshot(cpu(), {"loop0": (0, 134_000_000, 0, 10)}, wall=12.0, under={"vda": (3_000_000, 144_000_000)})
    # vda moved 141 MB in 2 s, 134 of them the target's loop device's
    assert [(m.name, m.value, m.unit) for m in others_disk([(before, after)])] == [("disk.others", 3.5, "MB/s")]
    assert others_disk([(before, Snapshot(cpu(), {}))]) == []  # no disk under the images (real devices)


def test_the_disk_under_a_file_is_a_disk_the_kernel_counts(tmp_path):
    import os

    from pytest_fsbench.measure.monitor import disk_under

    (tmp_path / "image").write_bytes(b"x")
    name = disk_under(str(tmp_path / "image"))
    dev = os.stat(tmp_path).st_dev
    if name is None:  # tmpfs, overlay: no block device under it
        assert not os.path.exists(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    else:
        assert name in (psutil.disk_io_counters(perdisk=True) or {})
    assert disk_under(str(tmp_path / "missing")) is None


def test_a_partition_is_counted_as_its_whole_disk(tmp_path):
    import os

    from pytest_fsbench.measure.monitor import disk_under

    (tmp_path / "image").write_bytes(b"x")
    dev = os.stat(tmp_path / "image").st_dev
    # a /sys/dev/block made here: the node of the file's device links to a partition of disk "sdz"
    partition = tmp_path / "devices" / "sdz" / "sdz1"
    partition.mkdir(parents=True)
    (partition / "partition").write_text("1\n")
    sys_block = tmp_path / "dev-block"
    sys_block.mkdir()
    (sys_block / f"{os.major(dev)}:{os.minor(dev)}").symlink_to(partition)
    assert disk_under(str(tmp_path / "image"), sys_block) == "sdz"
    (partition / "partition").unlink()
    assert disk_under(str(tmp_path / "image"), sys_block) == "sdz1"


def test_cpu_burners_beside_a_run_are_others_cpu():
    import subprocess
    import time

    from pytest_fsbench.measure.monitor import others_cpu, snapshot

    burners = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(psutil.cpu_count() or 1)]
    try:
        time.sleep(0.2)
        before = snapshot([])
        time.sleep(1.0)
        after = snapshot([])
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    # one burner per CPU, not waited for by this process while they ran: others', not ours
    [metric] = others_cpu([(before, after)])
    assert metric.value > 50.0


def test_kernel_threads_are_told_by_their_flag(tmp_path):
    import os

    from pytest_fsbench.measure.monitor import PF_KTHREAD, kernel_threads_cpu

    ticks = os.sysconf("SC_CLK_TCK")

    def task(pid: int, comm: str, flags: int, utime: int, stime: int) -> None:
        (tmp_path / str(pid)).mkdir()
        fields = ["S", "2", "0", "0", "0", "-1", str(flags), "0", "0", "0", "0", str(utime), str(stime)]
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({comm}) " + " ".join(fields + ["0"] * 30) + "\n")

    task(12, "kworker/u8:5-loop1", PF_KTHREAD | 0x40, 3 * ticks, 2 * ticks)
    task(13, "jbd2/loop0-8", PF_KTHREAD, 0, ticks)
    task(400, "yes (a burner)", 0x400000, 50 * ticks, 0)  # a user process, its name with a ')' in it
    assert kernel_threads_cpu(tmp_path) == 6.0
    assert kernel_threads_cpu() > 0  # this machine's: kthreadd and its threads have run
