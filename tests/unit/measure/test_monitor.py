
import psutil

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
