"""Every bad input is one line naming the value and what to do, given before anything is built
(pytest's usage error, exit 4; the `fsbench` command's, exit 2), and it destroys nothing."""

from __future__ import annotations

import json
import os
import sqlite3
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import execute_pytest, plan_command
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import Store

REPO = Path(__file__).resolve().parents[2]


def usage_error(args: list[str], tmp_path: Path, cwd: Path = REPO) -> str:
    """The one ERROR line of a pytest run that must stop before building anything."""
    images = tmp_path / "images"
    defaults = [f"--image-dir={images}", f"--store={tmp_path / 'fsbench.db'}"]  # unless args give their own
    done = execute_pytest(["benchmarks/test_dd.py", *(d for d in defaults if not any(a.startswith(d.split("=")[0])
                                                                                 for a in args)), *args], cwd=cwd)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, done.stderr
    assert not images.exists() or not list(images.iterdir()), "something was built"
    return errors[0]


@pytest.mark.parametrize("args, message", [
    (["--image-size=100T"], "--image-size=100T: larger than the "),
    (["--dd-size=100M", "--dd-bs=3M"], "--dd-size=100M is not a multiple of --dd-bs=3M"),
    (["--until-ci=100%"], "--until-ci='100%': give a percentage above 0 and below 100"),
    (["--max-time=0"], "--max-time='0': give a number of seconds above 0"),
    (["--runs=0"], "--runs='0': give a whole number of 1 or more"),
    (["--alpha=7"], "--alpha='7': give a significance level above 0 and below 0.5"),
    (["--threshold=dd.write>=5s"], "threshold 'dd.write>=5s' is in s but dd.write is measured in MB/s"),
    (["--threshold=dd.wrte>=1MB/s"], "threshold 'dd.wrte>=1MB/s': no workload measures a metric 'dd.wrte'"),
    (["--fs=ext4", "--threshold=xfs-single:dd.write>=1MB/s"],
     "--threshold 'xfs-single:dd.write>=1MB/s': no case of this session is 'xfs-single'"),
    (["--devices", "/dev/null"], "write --devices=/dev/null (with '='): pytest would take /dev/null for a test path"),
    (["--image-dir", "/tmp"], "write --image-dir=/tmp (with '=')"),
    (["--gate-mode=adaptive"], "--gate-mode='adaptive': choose sequential or fixed"),
    (["--inconclusive=maybe"], "--inconclusive='maybe': choose fail (an undecided gate fails the case) or pass"),
    (["--drift=none"], "--drift='none': choose machine (this machine's drift between sessions"),
    (["--fail-on-regression=dd.nope:3%", "--compare=last"],
     "--fail-on-regression=dd.nope:3%: no workload measures a metric 'dd.nope'"),
    (["--store=mysql://badin@127.0.0.1/badin"],
     "--store=mysql://badin@127.0.0.1/badin: mysql:// is no store fsbench knows"),
    (["--dd-bs=1M,1M"], "--dd-bs=1M,1M: '1M' is listed twice; name each value once"),
    (["--fs=ext4,ext4"], "--fs=ext4,ext4: 'ext4' is listed twice; name each value once"),
    (["--layout=single,single"], "--layout=single,single: 'single' is listed twice"),
    (["--cache=drop,drop"], "--cache=drop,drop: 'drop' is listed twice"),
    (["--data=random,random"], "--data=random,random: 'random' is listed twice"),
    (["--fs=ext4", "--fs-opt=ext4:mount=noatime", "--fs-opt=ext4:mount=noatime"],
     "--fs-opt: 'ext4:mount=noatime' is listed twice"),
    (["--fail-on-regression=0%", "--compare=last"], "--fail-on-regression '0%': the allowed change must be above 0"),
    (["--fs=ext4", "--paired=btrfs:compress=zstd"], "--paired btrfs:compress=zstd is for btrfs, which --fs does not"),
    (["--fs=btrfs", "--paired=btrfs:compress=lz4"], "--paired 'btrfs:compress=lz4': btrfs:compress=lz4: compress must"),
    # issue 23: --paired's errors name --paired, not --fs-opt
    (["--paired=bogus"], "--paired 'bogus': expected FS:KEY=VALUE"),
    (["--paired=ext4:foo=bar"], "--paired 'ext4:foo=bar': ext4 has no option 'foo'"),
    (["--paired="], "--paired='': give a value or leave the option out"),
    # issue 23: an empty value is no "off"; an option that only changes another is refused alone
    (["--devices="], "--devices='': give a value or leave the option out"),
    (["--until-ci="], "--until-ci='': give a value or leave the option out"),
    (["--until-ci-case=test_dd_write=5%"], "--until-ci-case='test_dd_write=5%': give a test id with its brackets"),
    (["--max-time="], "--max-time='': give a value or leave the option out"),
    (["--dd-size="], "--dd-size='': give a value or leave the option out"),
    (["--wipe-devices"], "--wipe-devices lets fsbench overwrite --devices, and none are given"),
    (["--across-hosts"], "--across-hosts lets --compare use another machine's baseline, and --compare is not given"),
    (["--max-runs=50"], "--max-runs is the budget of a dynamic mode (--until-ci, --until-ci-case, or --fail-on-regression with "
                        "--compare and --gate-mode=sequential), and this session has none"),
    (["--max-time=600"], "--max-time is the budget of a dynamic mode"),
    # issue 23: an option of one value given twice is not silently the last
    (["--runs=2", "--runs=3"], "--runs is given twice ('2', then '3'); it takes one value, so give it once"),
    (["--runs", "2", "--runs=3"], "--runs is given twice ('2', then '3')"),
    (["--dd-size=16M", "--dd-size=32M"], "--dd-size is given twice ('16M', then '32M')"),
    (["--runs=99999999999999999999"], "--runs='99999999999999999999': give a whole number of at most 100000"),
    (["--iozone-file=0xRAM"], "--iozone-file=0xRAM: '0xRAM' is no size; give N x RAM with N of 1 or more"),
    (["--threshold=dd.write>=1e400MB/s"], "threshold 'dd.write>=1e400MB/s': 1e400 is too large to compare with"),
    (["--threshold=dd.write>=1MB/s,dd.read>=1MB/s"],
     "threshold 'dd.write>=1MB/s,dd.read>=1MB/s': a threshold is one rule; give each rule on its own"),
    (["--save=a,b"], "--save='a,b': a session is saved as one baseline; give one name, without commas"),
    (["--save=last"], "--save='last': 'last' names the newest complete session in --compare"),
    (["--report=/proc/r.html"], "--report='/proc/r.html': cannot be written (No such file or directory)"),
    (["--image-dir=/proc/fsbench"], "--image-dir='/proc/fsbench': /proc is not writable here"),
    # issue 23: a file no case's devices could hold, even whole, is refused before a target is built
    (["--dd-size=100T"], "--dd-size=100T: ext4-single needs about 100.0T and its devices hold 4.0G "
                         "(1 x --image-size=4G); give a smaller --dd-size or a larger --image-size"),
    (["--dd-size=1G", "--image-size=1G", "--layout=single,raid1"], "--dd-size=1G: ext4-single needs about 1.1G"),
    # issue 23: a program that is no UML kernel is not booted in every case
    # issue 34: one configuration, one spelling; one setting, one route
    (["--data=50%,050%"], "--data: '50%' and '050%' are one value (50%); give it once"),
    (["--data=0%,random"], "--data: '0%' and 'random' are one value (random); give it once"),
    (["--fs=zfs", "--fs-opt=zfs:recordsize=128K", "--fs-opt=zfs:recordsize=131072"],
     "--fs-opt: 'zfs:recordsize=128K' and 'zfs:recordsize=131072' are one value (zfs:recordsize=128K); give it once"),
    (["--fs=btrfs", "--fs-opt=btrfs:compress=lzo", "--fs-opt=btrfs:mount=compress=zstd"],
     "--fs-opt btrfs:compress=lzo and btrfs:mount=compress=zstd both set compress, and the mount command would take "
     "only the last; set compress one way"),
    (["--fs=btrfs", "--fs-opt=btrfs:compress=lzo", "--fs-opt=btrfs:compress-force=zstd"],
     "--fs-opt btrfs:compress=lzo and btrfs:compress-force=zstd both set compress"),
    (["--fs=btrfs", "--fs-opt=btrfs:mount=noatime,compress=lzo,compress=zstd"],
     "--fs-opt btrfs:mount=noatime,compress=lzo,compress=zstd sets compress twice"),
    # issue 34: silent before, now one line
    (["--save=1"], "--save='1': a number names a session by its id in --compare and the fsbench commands"),
    (["--devices=/dev/null", "--image-size=8G"], "--image-size sizes the loop images fsbench makes, and --devices "
                                                 "replaces them with real devices of their own size"),
    (["--pts-options=;;"], "--pts-options=';;': no IDENTIFIER=VALUE in it"),
    (["--pts-options=test=write;test=read"], "--pts-options='test=write;test=read': 'test' is given twice (write, "
                                             "then read)"),
    (["--compare=1", "--fail-on-regression=dd.write:3%", "--fail-on-regression=dd.write:10%"],
     "--fail-on-regression=dd.write:3% and dd.write:10% are two rules for dd.write; give one"),
    (["--compare=1", "--fail-on-regression=3%", "--fail-on-regression=5%"],
     "--fail-on-regression=3% and 5% are two rules for every headline metric"),
    # issue 34: what failed with a traceback once the target was built, or ran and gave nothing
    (["--dd-bs=512,1", "--dd-size=1M", "--cache=direct"], "--dd-bs=1 with --cache=direct: direct I/O moves whole "
                                                          "sectors of 512 bytes; give a multiple of 512"),
    (["--fio-bs=1", "--cache=drop,direct"], "--fio-bs=1 with --cache=direct: direct I/O moves whole sectors"),
    (["--iozone-record=3K"], "--iozone-record=3K: iozone size '3K' is not a power of two"),
    (["--fs-opt=ext4:mount=noatime,ro"], "ext4:mount=noatime,ro: mount ro mounts the target read-only, and every "
                                         "workload writes to it; leave ro out"),
    (["--pts-binary=/nonexistent"], "--pts-binary='/nonexistent': /nonexistent is no executable file; name the "
                                    "phoronix-test-suite launcher"),
    (["--store=/dev/full"], "--store=/dev/full: is a character device, no regular file; name the store's file"),
    # issue 34, found by the sweep: File name too long, as an INTERNALERROR
    (["--image-dir=" + "x" * 300], "a name in it is longer than the 255 bytes a file name may have"),
    (["--store=/tmp/" + "x" * 300 + "/fsbench.db"], "a name in it is longer than the 255 bytes"),
    (["--report=" + "x" * 300], "a name in it is longer than the 255 bytes"),
    (["--kernel=uml:a=/bin/true"], "--kernel='uml:a=/bin/true': /bin/true is a program but no User-mode Linux kernel "
                                   "(no 'User Mode Linux' banner in it); build one with 'make ARCH=um'"),
    # issue 34: options of the gate in a session that compares nothing were ignored
    (["--alpha=0.1"], "--alpha changes how the gate judges a comparison, and this session compares nothing (no "
                      "--compare, --paired or --fail-on-regression); add one or leave --alpha out"),
    (["--gate-mode=fixed"], "--gate-mode changes how the gate judges a comparison, and this session compares nothing"),
    (["--drift=baseline"], "--drift changes how the gate judges a comparison, and this session compares nothing"),
    (["--inconclusive=fail"], "--inconclusive changes how the gate judges a comparison"),
    # issue 34, found by the sweep: a limit above the machine's memory; make -j100000000 ran for minutes
    (["--memory=1T"], "--memory='1T': this machine has "),
    (["--kernel-jobs=100000000"], "--kernel-jobs=100000000: '100000000' jobs only queue behind each other"),
    # --storage-rate: a rate fsbench can emulate, once each, on loop images under the host's kernel
    (["--storage-rate=fast"], "--storage-rate='fast': give a rate in MB/s (10^6 bytes a second), e.g. 32 or 32M"),
    (["--storage-rate=0"], "--storage-rate='0': give a rate from 1 to 10000 MB/s"),
    (["--storage-rate=20000"], "--storage-rate='20000': give a rate from 1 to 10000 MB/s"),
    (["--storage-rate=32,32"], "--storage-rate=32,32: '32' is listed twice"),
    (["--storage-rate=32,32M"], "--storage-rate: '32' and '32M' are one value (32 MB/s); give it once"),
    (["--storage-rate=32", "--devices=/dev/null"], "--storage-rate=32 with --devices: the rate is emulated on loop "
                                                   "images; real devices have their own speed"),
    (["--storage-rate=none,32", "--kernel=host+uml"], "--storage-rate=none,32 with --kernel=host+uml: the rate is "
                                                      "emulated on the host's loop images"),
    (["-k", "write", "--threshold=dd.read>=1MB/s"], "--threshold 'dd.read>=1MB/s': no selected test measures dd.read "
                                                     "(selected: test_dd_write), so it would check nothing"),
    # issue 34: btrfs raid1 on one named device skipped, and pytest exited 0
    (["--fs=btrfs", "--layout=single,raid1", "--devices=/dev/null"],
     "--devices=/dev/null names 1 device, and raid1 needs 2 (btrfs-raid1); name more devices or leave those "
     "layouts out of --layout"),
])
def test_bad_value_is_one_line_before_anything_is_built(tmp_path, args, message):
    assert message in usage_error(args, tmp_path)


@pytest.fixture
def special_files(tmp_path) -> dict[str, str]:
    """A FIFO and a socket, as a user's shell or another program leaves them."""
    import socket

    fifo, sock = tmp_path / "fifo", tmp_path / "sock"
    os.mkfifo(fifo)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock))
    yield {"fifo": str(fifo), "socket": str(sock)}
    listener.close()


@pytest.mark.parametrize("args, message", [
    # issue 44: an output at a special file blocked (a FIFO opened for writing waits for a reader)
    (["--report={fifo}"], "--report='{fifo}': is a FIFO (a named pipe), not a file; name a regular file"),
    (["--report={socket}"], "--report='{socket}': is a socket, not a file; name a regular file"),
    (["--report=/dev/zero"], "--report='/dev/zero': is a character device, not a file; name a regular file"),
    (["--junitxml={fifo}"], "--junitxml={fifo}: is a FIFO (a named pipe), not a file; name a regular file"),
    (["--store={fifo}"], "--store={fifo}: is a FIFO (a named pipe), no regular file; name the store's file"),
    # issue 44: a kernel path that exists but is no kernel was said not to exist
    (["--kernel=vm:{fifo}"], "--kernel='vm:{fifo}': {fifo} is a FIFO (a named pipe), not a kernel; name a bzImage"),
    (["--kernel=uml:/dev/null"], "--kernel='uml:/dev/null': /dev/null is a character device, not an executable file"),
    # issue 44: a '~' the shell did not expand (it does not after '=') was taken as a directory's name
    (["--image-dir=~/fsbench-images"], "--image-dir=~/fsbench-images: the shell did not expand '~' (it does not "
                                       "after '='), and fsbench takes a path as written; write "),
    (["--store=~/fsbench.db"], "--store=~/fsbench.db: the shell did not expand '~'"),
    (["--report=~/report.html"], "--report=~/report.html: the shell did not expand '~'"),
    (["--junitxml=~/junit.xml"], "--junitxml=~/junit.xml: the shell did not expand '~'"),
    (["--kernel=uml:~/linux/linux"], "--kernel=uml:~/linux/linux: the shell did not expand '~'"),
    # issue 44: an empty scope applied the threshold to every case, without a word
    (["--threshold=:dd.write>=1MB/s"], "threshold ':dd.write>=1MB/s': the scope before ':' is empty; name a "
                                       "filesystem or a case"),
    # found by issue 44's sweep: the same rule twice, checked twice without a word
    (["--threshold=dd.write>=1MB/s", "--threshold=dd.write >= 1MB/s"],
     "--threshold 'dd.write >= 1MB/s' is given twice; give each rule once"),
    # issue 44: every IOzone case skipped, exit 0
    (["benchmarks/test_iozone.py", "--iozone-record=64K", "--iozone-file=32K"],
     "--iozone-record=64K is larger than --iozone-file=32K, so no case of test_iozone could run"),
    (["benchmarks/test_iozone.py", "-k", "throughput", "--iozone-record=64K", "--iozone-file=128K",
      "--iozone-processes=4"], "--iozone-record=64K is larger than each process's file (--iozone-file=128K shared "
                               "by --iozone-processes=4), so no case of test_iozone_throughput could run"),
])
def test_a_special_file_an_unexpanded_home_or_an_impossible_value_is_one_line(tmp_path, special_files, args,
                                                                               message):
    line = usage_error([arg.format(**special_files) for arg in args], tmp_path)
    assert message.format(**special_files) in line, line


def zfs_fuse_only() -> str | None:
    from pytest_fsbench.kernels.probe import probe

    return None if probe().zfs_impl == "zfs-fuse" else "needs zfs-fuse (pool version 23), which lacks these values"


@pytest.mark.root
@pytest.mark.parametrize("args, message", [
    (["--fs=ext4", "--fs-opt=ext4:mount=bogusopt"],
     ["--fs-opt ext4:mount=bogusopt: mount rejects it (exit status 32): mount: ",
      ": wrong fs type, bad option, bad superblock on /dev/loop"]),
    (["--fs=ext4", "--fs-opt=ext4:mkfs=-Z"],
     ["--fs-opt ext4:mkfs=-Z: mkfs.ext4 rejects it (exit status 1): mkfs.ext4: invalid option -- 'Z'; fix or drop "
      "the value (tried on a scratch image before anything was measured; nothing is left of it)"]),
    (["--fs=btrfs", "--paired=btrfs:mount=bogus"],
     ["--paired btrfs:mount=bogus: mount rejects it (exit status 32): mount: "]),
    pytest.param(["--fs=zfs", "--fs-opt=zfs:xattr=sa"],
                 ["--fs-opt zfs:xattr=sa: zpool rejects it (exit status 1): cannot create 'fsbench-",
                  "': 'xattr' must be one of 'on | off'; fix or drop the value"],
                 marks=pytest.mark.skipif(zfs_fuse_only() is not None, reason=str(zfs_fuse_only()))),
    pytest.param(["--fs=zfs", "--fs-opt=zfs:checksum=sha512"],
                 ["--fs-opt zfs:checksum=sha512: zpool rejects it (exit status 1): cannot create 'fsbench-",
                  "': 'checksum' must be one of 'on | off | fletcher2 | fletcher4 | sha256'"],
                 marks=pytest.mark.skipif(zfs_fuse_only() is not None, reason=str(zfs_fuse_only()))),
])
def test_a_value_only_the_tool_can_judge_is_one_line_before_anything_is_measured(tmp_path, args, message,
                                                                                  no_leftovers):
    """Issue 23: the tool is asked once, on a scratch image with the case's own commands; its
    rejection is the usage error, and no session, image, loop device, mount or pool is left."""
    line = usage_error(args, tmp_path)
    assert all(part in line for part in message), line
    assert not (tmp_path / "fsbench.db").exists(), "no session was recorded"


def sessions_in(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    finally:
        con.close()


def test_a_rule_for_a_metric_no_selected_test_measures_is_refused_before_measuring(tmp_path):
    """Issue 34: it gated nothing and the session passed."""
    saved_baseline(tmp_path / "fsbench.db", "base", runs=6)
    message = usage_error(["-k", "write", "--compare=base", "--fail-on-regression=dd.read:5%"], tmp_path)
    assert message == ("ERROR: --fail-on-regression=dd.read:5%: no selected test measures dd.read (selected: "
                       "test_dd_write), so the rule would gate nothing; select a test that measures it, or leave the "
                       "rule out")
    assert sessions_in(tmp_path / "fsbench.db") == 1, "no session was recorded"


def test_a_vm_kernel_directory_that_holds_no_built_kernel(tmp_path):
    """Issue 34: taken for a build tree, then QEMU's "Is a directory" as a GuestError traceback."""
    empty = tmp_path / "linux"
    empty.mkdir()
    assert usage_error([f"--kernel=vm:{empty}"], tmp_path).endswith(
        f"{empty} is a directory but no built kernel tree (no arch/x86/boot/bzImage in it); run make there first, or "
        "name a bzImage")


def test_a_device_for_a_store_leaves_no_journal_beside_it(tmp_path):
    """Issue 34: refused, but /dev/null-journal was left behind."""
    existed = Path("/dev/null-journal").exists()
    assert usage_error(["--store=/dev/null"], tmp_path).endswith("--store=/dev/null: is a character device, no "
                                                                 "regular file; name the store's file")
    assert one_line_error(fsbench("push", "1", f"--store={tmp_path / 'x.db'}", "--to=/dev/null")).startswith(
        "fsbench push: --to=/dev/null: is a character device, no regular file")
    assert Path("/dev/null-journal").exists() == existed


def test_kernel_config_make_does_not_know(tmp_path):
    done = execute_pytest(["benchmarks/test_kernel_build.py", "--kernel-config=fooconfig",
                       f"--image-dir={tmp_path / 'images'}"], cwd=REPO)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "'fooconfig' is not a kernel configuration target make knows" in done.stderr
    assert not (tmp_path / "images").exists()


def test_image_dir_that_is_a_file(tmp_path):
    (tmp_path / "afile").write_text("keep me")
    done = execute_pytest(["benchmarks/test_dd.py", f"--image-dir={tmp_path / 'afile'}"], cwd=REPO)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "is not a directory; name a directory" in done.stderr
    assert (tmp_path / "afile").read_text() == "keep me"


@pytest.mark.root
def test_image_dir_on_a_read_only_filesystem(tmp_path):
    readonly = tmp_path / "ro"
    readonly.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1M", "fsbench-test-ro", str(readonly)], check=True)
    try:
        done = execute_pytest(["benchmarks/test_dd.py", f"--image-dir={readonly / 'images'}",
                           f"--store={tmp_path / 'fsbench.db'}"], cwd=REPO)
    finally:
        subprocess.run(["umount", str(readonly)], check=True)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"{readonly} is not writable here (read-only or no permission)" in done.stderr


@pytest.mark.parametrize("content, message", [
    (None, "is a directory; name the store's file"),
    (b"this is not a database\n" * 100, "is not an SQLite database, so not an fsbench result store"),
])
def test_a_store_that_cannot_be_used_is_refused_before_anything_is_built(tmp_path, content, message):
    store = tmp_path / "store"
    if content is None:
        store.mkdir()
    else:
        store.write_bytes(content)
    done = execute_pytest(["benchmarks/test_dd.py", f"--store={store}", f"--image-dir={tmp_path / 'images'}"], cwd=REPO)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert message in done.stderr
    assert content is None or store.read_bytes() == content
    assert not (tmp_path / "images").exists()


def saved_baseline(path: Path, name: str, runs: int, token: str = "fixture-1234") -> None:
    """A store holding one complete session of dd.write samples saved as (added to) a baseline,
    made through the store's own interface: the data are fixed, so the outcome is certain."""
    store = Store(path)
    session = store.start_session(token, {"argv": []}, {"hostname": platform.node()})  # this machine's
    row = store.case_row(session, "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]", "ext4-single",
                         {"fs": "ext4", "layout": "single", "options": {}}, "dd", {"bs": "1M"}, "drop", "random", {})
    for i in range(runs):
        store.add_run(row, False, "t", 1.0, "drop", [Metric("dd.write", 100.0 + i, "MB/s", Direction.HIGHER)])
    store.finish_case(row, "done", "runs")
    store.finish_session(session, "complete")
    store.save_baseline(name, session)
    store.close()


def test_a_gate_that_can_never_fire_is_refused(tmp_path):
    """Runs compared with runs (--drift=baseline: one baseline session compared run by run; by default
    the gate compares session medians on the drift, which any difference large enough can pass)."""
    saved_baseline(tmp_path / "fsbench.db", "base", runs=2)
    message = usage_error(["--runs=2", "--gate-mode=fixed", "--compare=base", "--fail-on-regression=5%",
                           "--drift=baseline"], tmp_path)
    assert "with 2 baseline runs and at most 2 new runs a change can never be significant at --alpha=0.05" in message
    assert "it needs at least 5 new runs" in message  # one-sided: 1/C(7, 5) = 0.048
    # sequential: the last look (--max-runs) counts, at the level each look is tested at
    message = usage_error(["--runs=2", "--max-runs=4", "--compare=base", "--fail-on-regression=5%",
                           "--drift=baseline"], tmp_path)
    assert "with 2 baseline runs and at most 4 new runs a change can never be significant" in message


def test_a_rule_on_the_work_against_a_baseline_without_counts_is_refused(tmp_path):
    """Issue 41: a baseline recorded before fsbench counted the work holds no count, so work:5% would
    gate nothing after measuring everything; a misspelt count names the work's metrics only."""
    saved_baseline(tmp_path / "fsbench.db", "base", runs=10)
    message = usage_error(["-k", "write", "--fs=ext4", "--compare=base", "--fail-on-regression=work:5%"], tmp_path)
    assert message.startswith("ERROR: --fail-on-regression=work:5% with --compare=base: the baseline holds no count of "
                              "the work per byte moved"), message
    message = usage_error(["--compare=base", "--fail-on-regression=work.flush_per_gb:5%"], tmp_path)
    assert message.endswith("no workload measures a metric 'work.flush_per_gb'; its metrics are work.written|read, "
                            "work.write_requests|read_requests, work.flushes|discards, work.commits, "
                            "work.write_amp|read_amp, work.requests_per_mb, work.flushes_per_gb|commits_per_gb"), message


def test_paired_rounds_that_can_never_differ_are_refused(tmp_path):
    message = usage_error(["--fs=btrfs", "--paired=btrfs:compress-force=zstd", "--runs=4"], tmp_path)
    assert message.endswith("--paired with --runs=4 rounds can never show a significant difference at --alpha=0.05; "
                       "use --runs=5 or more")


def test_a_baseline_without_measured_runs_is_refused(tmp_path):
    path = tmp_path / "fsbench.db"
    store = Store(path)
    store.finish_session(store.start_session("empty-1234", {}, {}), "complete")
    store.close()
    assert "--compare 1: session 1 holds no measured runs" in usage_error(["--compare=1"], tmp_path)


ALL_SKIP = """
import pytest

def test_case(fsbench_spec):
    pytest.skip("nothing to measure here")
"""


def test_saving_a_session_that_measured_nothing_fails(tmp_path):
    (tmp_path / "test_skip.py").write_text(ALL_SKIP)
    done = execute_pytest(["test_skip.py", f"--store={tmp_path / 'fsbench.db'}", "--save=base"], cwd=tmp_path)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-2000:]
    assert "fsbench: not saved as baseline 'base': no case was measured" in done.stdout
    con = sqlite3.connect(tmp_path / "fsbench.db")
    assert con.execute("SELECT COUNT(*) FROM baselines").fetchone()[0] == 0
    con.close()


@pytest.mark.root
def test_a_device_too_small_for_the_workload_is_refused_before_anything_is_written(tmp_path):
    image = tmp_path / "small.img"
    image.write_bytes(b"")
    os.truncate(image, 8 << 20)
    device = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True,
                            check=True).stdout.strip()
    try:
        message = usage_error([f"--devices={device}"], tmp_path)
        written = Path(device).read_bytes()
    finally:
        subprocess.run(["losetup", "--detach", device], check=True)
    assert message.endswith(f"--dd-size=256M: ext4-single needs about 320.0M and its devices hold 8.0M (--devices "
                            f"{device} of 8.0M); give a smaller --dd-size or larger --devices")
    assert written == bytes(8 << 20)


# --- the fsbench command -----------------------------------------------------------------------------


def fsbench(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})}, cwd=cwd)


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("args, message", [
    (["--list", "--tree=linux"], "--list lists the store's bisects: give no --tree with it"),
    (["--list", "--report=b.html"], "--list lists the store's bisects: give no --report with it"),
    (["--resume", "--plan"], "--plan --resume: a plan is of a new bisect"),
    (["--tree=linux", "--good=a", "--bad=b", "--plan", "--report=b.html"], "--plan --report=b.html: a plan writes no "
                                                                          "page"),
])
def test_a_bisect_option_of_another_mode_is_refused_not_dropped(tmp_path, args, message):
    """Issue 44's sweep: --list and --plan dropped --tree and --report without a word, and --resume --plan
    ran the bisect it was asked to plan."""
    done = fsbench("bisect", f"--store={tmp_path / 'x.db'}", *args, cwd=tmp_path)
    assert f"fsbench bisect: {message}" in one_line_error(done)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["sessions", "compare last last", "export last"])
@pytest.mark.parametrize("content, message", [
    (b"", "is an empty file, not an fsbench store"),
    (b"garbage " * 100, "is not an SQLite database"),
])
def test_commands_refuse_what_is_not_a_store_and_write_nothing_into_it(tmp_path, command, content, message):
    store = tmp_path / "x.db"
    store.write_bytes(content)
    assert message in one_line_error(fsbench(*command.split(), f"--store={store}"))
    assert store.read_bytes() == content


def test_compare_with_an_alpha_out_of_range(tmp_path):
    saved_baseline(tmp_path / "fsbench.db", "base", runs=6)
    message = one_line_error(fsbench("compare", "base", "base", "--alpha", "7", f"--store={tmp_path / 'fsbench.db'}"))
    assert message == "fsbench compare: --alpha='7': give a significance level above 0 and below 0.5, e.g. 0.05"


def test_compare_of_a_session_with_itself_is_refused(tmp_path):
    saved_baseline(tmp_path / "fsbench.db", "base", runs=6)
    error = one_line_error(fsbench("compare", "base", "base", f"--store={tmp_path / 'fsbench.db'}"))
    assert error == "fsbench compare: fsbench compare base base: the same session twice; name two"


def test_baselines_listed_and_dropped(tmp_path):
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    saved_baseline(store, "base", runs=6, token="fixture-5678")
    listed = fsbench("baseline", f"--store={store}")
    assert listed.returncode == 0 and listed.stdout.strip() == "base: sessions 1, 2"
    compared = fsbench("compare", "base", "2", f"--store={store}")  # the baseline without the new session
    assert f"session 1 (base, on {platform.node()}) -> session 2 (on {platform.node()})" in compared.stdout
    # exit 1 only when a headline metric came out significantly worse (two unchanged sessions can)
    assert compared.returncode in (0, 1) and compared.stdout.rstrip().endswith(f"exit {compared.returncode}")
    dropped = fsbench("baseline", "--drop", "base", f"--store={store}")
    assert dropped.stdout.strip() == "fsbench baseline: forgot base (2 session(s); they stay in the store)"
    assert one_line_error(fsbench("baseline", "--drop", "base", f"--store={store}")).startswith(
        "fsbench baseline: no baseline 'base' in")


@pytest.mark.parametrize("output, message", [
    ("missing/dir/out.json", "the directory {tmp}/missing/dir does not exist"),
    (".", "is a directory; name the file to write"),
])
def test_export_into_a_place_that_cannot_be_written(tmp_path, output, message):
    saved_baseline(tmp_path / "fsbench.db", "base", runs=6)
    target = str(tmp_path / output) if output != "." else str(tmp_path)
    error = one_line_error(fsbench("export", "base", "-o", target, f"--store={tmp_path / 'fsbench.db'}"))
    assert message.format(tmp=tmp_path) in error


@pytest.mark.parametrize("args, message", [
    (["-o", ""], "fsbench report: --output='': give a value or leave the option out"),
    (["-o", " "], "fsbench report: -o ' ': give the file to write, or - for standard output"),
    (["-o", "/proc/r.html"], "fsbench report: -o /proc/r.html: cannot be written (No such file or directory)"),
    (["--figures=/proc/fsbench"], "fsbench report: --figures=/proc/fsbench: /proc is not writable here"),
])
def test_report_into_a_place_that_cannot_be_written(tmp_path, args, message):
    """Checked before the page is drawn (issue 23: --figures failed after the page was written)."""
    saved_baseline(tmp_path / "fsbench.db", "base", runs=6)
    page = tmp_path / "r.html"
    output = [] if args[0] == "-o" else ["-o", str(page)]  # -o once: given twice is an error of its own
    error = one_line_error(fsbench("report", "base", f"--store={tmp_path / 'fsbench.db'}", *output, *args))
    assert error.startswith(message)
    assert not page.exists()


def test_export_last_on_an_empty_store(tmp_path):
    Store(tmp_path / "fsbench.db").close()
    error = one_line_error(fsbench("export", "last", f"--store={tmp_path / 'fsbench.db'}"))
    assert "'last': no complete session in" in error and "compare" not in error


def test_export_to_pts_without_pts(tmp_path):
    saved_baseline(tmp_path / "fsbench.db", "base", runs=6)
    home = tmp_path / "pts-home"
    error = one_line_error(fsbench("export", "base", "--format", "pts", "--pts-save", "mine",
                                   f"--store={tmp_path / 'fsbench.db'}",
                                   env={"FSBENCH_PTS": str(tmp_path / "no-pts"), "PTS_USER_PATH_OVERRIDE": str(home)}))
    # issue 44: the launcher given (here in $FSBENCH_PTS) is named, not only PATH's absence
    assert f"$FSBENCH_PTS={tmp_path / 'no-pts'}: no executable file there; name the phoronix-test-suite launcher" \
        in error, error
    assert not home.exists()
    error = one_line_error(fsbench("export", "base", "--format", "pts", "--pts-save", "mine",
                                   f"--store={tmp_path / 'fsbench.db'}", env={"FSBENCH_PTS": "", "PATH": "/usr/bin:/bin",
                                                                              "PTS_USER_PATH_OVERRIDE": str(home)}))
    assert "phoronix-test-suite not found on PATH" in error, error


@pytest.mark.root
def test_a_target_too_small_for_the_workload_is_refused_before_it_runs(tmp_path, no_leftovers):
    """A 768 MiB bonnie++ file fits a 1G image, but on btrfs (copy-on-write) the rewrite needs
    room for a second copy, which the filesystem on it does not have: found once the target
    tells its free space, before the first run."""
    done = execute_pytest(["benchmarks/test_bonnie.py", "--fs=btrfs", "--image-size=1G", "--bonnie-size=768",
                       f"--image-dir={tmp_path / 'images'}", f"--store={tmp_path / 'fsbench.db'}"], cwd=REPO)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-2000:]
    assert "btrfs-single: bonnie needs about 1.6G on the target and btrfs-single has" in done.stdout
    assert "raise --image-size (now 1.0G)" in done.stdout
    con = sqlite3.connect(tmp_path / "fsbench.db")
    assert con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0  # refused before the first run
    con.close()


def empty_session(path: Path, status: str) -> int:
    """A session recorded as one that measured nothing ends (failed or empty)."""
    store = Store(path)
    session = store.start_session(f"{status}-1234", {"argv": []}, {"hostname": platform.node()})
    store.finish_session(session, status)
    store.close()
    return session


@pytest.mark.parametrize("args, message", [
    # issue 23: an empty value is no "off"; an option that only changes another is refused alone
    (["baseline", "--drop=", "{store}"], "fsbench baseline: --drop='': give a value or leave the option out"),
    (["export", "base", "--format=pts", "--pts-save=", "{store}"],
     "fsbench export: --pts-save='': give a value or leave the option out"),
    (["export", "base", "--format=pts", "--force", "{store}"],
     "fsbench export: --force replaces an existing PTS result file of --pts-save NAME or an -o FILE, and neither "
     "is given"),
    (["sessions", "--host=", "{store}"], "fsbench sessions: --host='': give a value or leave the option out"),
    (["doctor", "--kernel=bogus"], "fsbench doctor: --kernel='bogus': unknown kernel 'bogus'"),
    (["report", "base", "--format=bmp", "{store}"], "fsbench report: argument --format: invalid choice: 'bmp'"),
    # a session that measured nothing is not compared or exported as if it had
    (["compare", "base", "2", "{store}"],
     "fsbench compare: session 2 (failed) measured nothing, so there is nothing to compare"),
    (["export", "2", "--format=pts", "{store}"],
     "fsbench export: session 2 (failed) measured nothing, so there is nothing to export"),
    # push: the store it writes is --to, made only for a session that exists
    (["push", "9999", "--to={tmp}/new.db", "{store}"], "fsbench push: no baseline or session '9999' in"),
    (["push", "base", "--to=postgresql://me:secret@db.example/fsbench", "{store}"],
     "fsbench push: --to=postgresql://me@db.example/fsbench: put the password in PGPASSFILE"),
    (["push", "base", "--to={tmp}", "{store}"], "fsbench push: --to={tmp} is a directory; name the store's file"),
    (["push", "base", "--to=", "{store}"], "fsbench push: --to='': give a value or leave the option out"),
    # issue 34: an option of one value given twice is refused, not silently the last
    (["baseline", "--drop=nosuch", "--drop=base", "{store}"],
     "fsbench baseline: --drop is given twice ('nosuch', then 'base'); it takes one value, so give it once"),
    (["report", "base", "-o", "{tmp}/a.html", "--output={tmp}/b.html", "{store}"],
     "fsbench report: --output is given twice ('{tmp}/a.html', then '{tmp}/b.html')"),
    (["compare", "base", "2", "--alpha=0.1", "--alpha", "0.2", "{store}"],
     "fsbench compare: --alpha is given twice ('0.1', then '0.2')"),
    (["sessions", "--host=a", "--host=b", "{store}"], "fsbench sessions: --host is given twice ('a', then 'b')"),
    (["export", "base", "-o", "-", "-o", "-", "{store}"], "fsbench export: --output is given twice ('-', then '-')"),
    # issue 34: report drew a page against a failed session, where compare and export refuse it
    (["report", "1", "--compare=2", "-o", "{tmp}/r.html", "{store}"],
     "fsbench report: session 2 (failed) measured nothing, so there is nothing to compare with"),
    # issue 34: a run root that is a file was searched, and "nothing left behind" said
    (["cleanup", "--run-root={tmp}/fsbench.db"],
     "fsbench cleanup: --run-root={tmp}/fsbench.db: is no directory; name the directory sessions keep their state in"),
    (["cleanup", "--run-root={tmp}/nowhere"], "fsbench cleanup: --run-root={tmp}/nowhere: does not exist"),
    # found by the sweep: "none that match", exit 0
    (["sessions", "--since=2026-02-01", "--until=2026-01-01", "{store}"],
     "fsbench sessions: --since 2026-02-01T00:00:00+00:00 is not before --until 2026-01-01T00:00:00+00:00"),
    # issue 44: the path given was never named; an output's place was not checked; any directory was a site's
    (["upload", "result", "--pts-binary={tmp}/nonexistent"],
     "fsbench upload: --pts-binary={tmp}/nonexistent: no executable file there; name the phoronix-test-suite "
     "launcher"),
    (["changes", "--figure=/proc/changes.svg", "{store}"],
     "fsbench changes: --figure /proc/changes.svg: cannot be written (No such file or directory)"),
    (["docs", "--write={tmp}"], "fsbench docs: --write={tmp}: no mkdocs.yml beside it, so it is no site's pages' "
                                "directory"),
    # issue 44: a '~' the shell did not expand (after '=') was taken as a name
    (["report", "base", "--output=~/report.html", "{store}"],
     "fsbench report: --output=~/report.html: the shell did not expand '~' (it does not after '='), and fsbench takes "
     "a path as written; write "),
    (["sessions", "--store=~/fsbench.db"], "fsbench sessions: --store=~/fsbench.db: the shell did not expand '~'"),
    (["docs", "--write=~/docs"], "fsbench docs: --write=~/docs: the shell did not expand '~'"),
    # found by issue 44's sweep: a page written as a new file in /dev (no disk there by that name)
    (["report", "base", "-o", "/dev/fsbench-no-such-disk", "{store}"],
     "fsbench report: -o /dev/fsbench-no-such-disk: is no device here, and /dev holds devices, not files"),
    (["report", "base", "--allowed=abc", "-o", "{tmp}/r.html", "{store}"],
     "fsbench report: argument --allowed: 'abc': give the allowed change as a percent, e.g. 5%"),
    (["report", "base", "--figures=~/figures", "{store}"], "fsbench report: --figures=~/figures: the shell did not "
                                                           "expand '~'"),
])
def test_a_command_refuses_in_one_line_and_leaves_nothing(tmp_path, args, message):
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    empty_session(store, "failed")
    before = store.read_bytes()
    fill = {"store": f"--store={store}", "tmp": str(tmp_path)}
    done = fsbench(*(arg.format(**fill) for arg in args), cwd=tmp_path)
    assert one_line_error(done).startswith(message.format(**fill))
    assert done.stdout == ""  # doctor printed its table before the error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fsbench.db"]  # no new.db, -wal, report.html
    assert store.read_bytes() == before


@pytest.mark.parametrize("args, message", [
    (["--runs=abc"], "fsbench study: ERROR: --runs='abc': give a whole number"),
    (["--bogus-option"], "fsbench study: ERROR: unrecognized arguments: --bogus-option"),
    (["--max-runs=abc"], "fsbench study: ERROR: --max-runs='abc': give a whole number"),
    (["--max-runs", "3"], "fsbench study: ERROR: --runs 5, --warmup 1, --max-runs 3: need runs >= 1, warmup >= 0 and "
                          "max-runs >= runs"),
    # found by issue 44's sweep: checked only once the whole study had run
    (["--plan", "--alpha=2"], "fsbench study: --alpha='2': give a significance level above 0 and below 0.5, e.g. 0.05"),
])
def test_a_study_with_a_bad_pytest_option_stops_before_pytest_runs(tmp_path, args, message):
    done = fsbench("study", "btrfs-options", f"--image-dir={tmp_path / 'images'}", *args, cwd=tmp_path)
    assert one_line_error(done) == message
    assert list(tmp_path.iterdir()) == []


def damage(path: Path) -> bytes:
    """The store with its last page's b-tree header broken, as a disk or a crash may leave it."""
    data = bytearray(path.read_bytes())
    data[len(data) - 4096] = 0x07  # no b-tree page type
    path.write_bytes(bytes(data))
    return bytes(data)


def test_a_damaged_store_is_not_written_into(tmp_path):
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=300)
    damaged = damage(store)
    message = usage_error([], tmp_path)
    assert message.startswith(f"ERROR: the result store {store} is damaged (SQLite's quick_check: ")
    assert "restore it from a copy" in message
    assert store.read_bytes() == damaged
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fsbench.db"]


@pytest.fixture
def read_only_mount(tmp_path):
    """A tmpfs at tmp_path/ro holding a store with one session, then mounted read-only."""
    where = tmp_path / "ro"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16M", "fsbench-test-ro", str(where)], check=True)
    try:
        saved_baseline(where / "fsbench.db", "base", runs=6)
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@pytest.mark.root
def test_a_read_only_mount(tmp_path, read_only_mount):
    """A new store there is refused as read-only (it said 'only 1.0M free'); a store there is
    read (it was refused even to list) and nothing is written beside it; the figures and --to
    name the place."""
    ro = read_only_mount
    assert (f"--store={ro / 'new.db'}: {ro} cannot be written (a read-only filesystem, an immutable file or no "
            "permission)") in usage_error([f"--store={ro / 'new.db'}"], tmp_path)
    listed = fsbench("sessions", f"--store={ro / 'fsbench.db'}")
    assert listed.returncode == 0 and "fixture-1234" in listed.stdout, listed.stderr
    pushed = fsbench("push", "base", f"--store={ro / 'fsbench.db'}", f"--to={ro / 'team.db'}")
    assert one_line_error(pushed).startswith(f"fsbench push: --to={ro / 'team.db'}: {ro} cannot be written")
    drawn = fsbench("report", "base", f"--store={ro / 'fsbench.db'}", "-o", str(tmp_path / "r.html"),
                    f"--figures={ro / 'figures'}")
    assert one_line_error(drawn).startswith(f"fsbench report: --figures={ro / 'figures'}: {ro} is not writable here")
    assert sorted(p.name for p in ro.iterdir()) == ["fsbench.db"]


@pytest.fixture
def immutable_store(tmp_path):
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    if subprocess.run(["chattr", "+i", str(store)], capture_output=True).returncode != 0:
        pytest.skip(f"chattr +i is not supported on {tmp_path}'s filesystem")
    try:
        yield store
    finally:
        subprocess.run(["chattr", "-i", str(store)], check=True)


@pytest.mark.root
def test_an_immutable_store_is_refused_for_a_session_and_read_for_a_listing(tmp_path, immutable_store):
    """It was an INTERNALERROR that left -wal and -shm files beside it."""
    assert (f"--store={immutable_store}: {immutable_store} cannot be written (a read-only filesystem, an immutable "
            "file or no permission)") in usage_error([], tmp_path)
    listed = fsbench("sessions", f"--store={immutable_store}")
    assert listed.returncode == 0 and "fixture-1234" in listed.stdout, listed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fsbench.db"]


# --- issue 34: no output is written over a store or a file fsbench did not write ------------------------


def test_the_report_is_never_the_session_s_store_or_another_database(tmp_path):
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    other = tmp_path / "team.db"
    saved_baseline(other, "base", runs=6)
    kept = store.read_bytes(), other.read_bytes()
    assert usage_error([f"--report={store}"], tmp_path) == (
        f"ERROR: --report={store}: is the result store {store} (or its journal); name another file")
    assert usage_error([f"--report={other}", "--force"], tmp_path) == (
        f"ERROR: --report={other}: is an SQLite database (a result store?), which fsbench never replaces; "
        "name another file")
    assert (store.read_bytes(), other.read_bytes()) == kept


def test_the_report_replaces_a_file_fsbench_did_not_write_only_with_force(tmp_path):
    notes = tmp_path / "notes.html"
    notes.write_text("my notes\n")
    assert usage_error([f"--report={notes}"], tmp_path) == (
        f"ERROR: --report={notes}: exists and is no report fsbench wrote; name a new file, or pass --force to "
        "replace it")
    assert usage_error(["--force"], tmp_path).startswith("ERROR: --force lets --report replace a file fsbench did "
                                                        "not write, and --report is not given")
    assert notes.read_text() == "my notes\n"


@pytest.mark.parametrize("command, kind", [("report", "report"), ("export", "export"),
                                           ("export --format=pts", "export")])
def test_a_command_s_output_is_never_a_store_and_replaces_only_its_own_kind(tmp_path, command, kind):
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    team = tmp_path / "team.db"
    saved_baseline(team, "base", runs=6)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    kept = store.read_bytes(), team.read_bytes()
    run = [*command.split(), "1", f"--store={store}", "-o"]
    assert one_line_error(fsbench(*run, str(store))) == (
        f"fsbench {command.split()[0]}: -o {store}: is the result store {store} (or its journal); name another file")
    assert one_line_error(fsbench(*run, str(team), "--force")).endswith(
        f"-o {team}: is an SQLite database (a result store?), which fsbench never replaces; name another file")
    assert one_line_error(fsbench(*run, f"{store}-wal")).endswith("(or its journal); name another file")
    assert one_line_error(fsbench(*run, str(notes))).endswith(
        f"-o {notes}: exists and is no {kind} fsbench wrote; name a new file, or pass --force to replace it")
    assert (store.read_bytes(), team.read_bytes(), notes.read_text()) == (*kept, "my notes\n")
    written = tmp_path / "out"
    assert fsbench(*run, str(written)).returncode == 0
    assert fsbench(*run, str(written)).returncode == 0, "its own output is replaced"
    assert fsbench(*run, str(notes), "--force").returncode == 0
    assert notes.read_text() != "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fsbench.db", "notes.txt", "out", "team.db"]


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_figures_replace_only_fsbench_s_figures(tmp_path, fmt):
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    figures = tmp_path / "figures"
    run = ["report", "1", f"--store={store}", "-o", str(tmp_path / "r.html"), f"--figures={figures}", f"--format={fmt}"]
    assert fsbench(*run).returncode == 0
    drawn = figures / f"box-01-dd-write.{fmt}"
    assert fsbench(*run).returncode == 0, "its own figures are replaced"
    drawn.write_bytes(b"a drawing of mine")
    (tmp_path / "r.html").unlink()
    assert one_line_error(fsbench(*run)) == (f"fsbench report: --figures={figures}: {drawn} exists and is no figure "
                                             "fsbench wrote; name a new file, or pass --force to replace it")
    assert drawn.read_bytes() == b"a drawing of mine" and not (tmp_path / "r.html").exists()
    drawn.write_bytes(store.read_bytes())
    assert "is an SQLite database" in one_line_error(fsbench(*run, "--force"))
    drawn.write_bytes(b"a drawing of mine")
    assert fsbench(*run, "--force").returncode == 0 and drawn.read_bytes() != b"a drawing of mine"


def test_the_change_points_figure_is_never_a_database(tmp_path):
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    figure = tmp_path / "changes.svg"
    figure.write_bytes(store.read_bytes())
    assert one_line_error(fsbench("changes", f"--store={store}", f"--figure={figure}")) == (
        f"fsbench changes: --figure {figure}: is an SQLite database (a result store?), which fsbench never "
        "replaces; name another file")
    assert figure.read_bytes() == store.read_bytes()


@pytest.mark.root
def test_a_loop_device_another_process_holds_open_is_passed_over(tmp_path, no_leftovers):
    """Issue 34: a CI run's teardown failed busy on a /dev/loop0 another job held open, which
    losetup --find had given the session; the provider now takes the next one nobody holds."""
    free = subprocess.run(["losetup", "--find"], capture_output=True, text=True, check=True).stdout.strip()
    holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time\nfd = os.open(sys.argv[1], os.O_RDWR)\n"
                               "print('open', flush=True)\ntime.sleep(600)", free], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        done = execute_pytest(["benchmarks/test_dd.py", "-k", "write", "--fs=ext4", "--runs=1", "--dd-size=16M",
                               "--image-size=512M", f"--image-dir={tmp_path / 'images'}",
                               f"--store={tmp_path / 'fsbench.db'}"], cwd=REPO)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stdout[-2000:]
    con = sqlite3.connect(tmp_path / "fsbench.db")
    manifest = con.execute("SELECT manifest FROM cases").fetchone()[0]
    con.close()
    used = [d["path"] for d in json.loads(manifest)["devices"]]
    assert used and free not in used, (free, used)


@pytest.mark.root
@pytest.mark.parametrize("text", ['{"pid": 40', '{"image_dir": "/nowhere"}'])
def test_cleanup_reads_a_truncated_or_pid_less_state_file(tmp_path, text):
    """Issue 34: JSONDecodeError / KeyError, nothing cleaned; now the session is named by its
    directory (PID-HEX). --dry-run: the machine's other leftovers are other sessions' to remove."""
    session = tmp_path / "4000000-ab12"
    session.mkdir()
    (session / "state.json").write_text(text)
    done = fsbench("cleanup", "--dry-run", f"--run-root={tmp_path}")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert f"would remove session_dirs: {session}" in " ".join(done.stdout.split()), done.stdout


def test_a_store_locked_by_another_process_is_one_line(tmp_path):
    """Issue 34: 30 s, then 69 lines of INTERNALERROR; now one line after the same wait, and no
    session is left in it."""
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    locker = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time\ncon = sqlite3.connect(sys.argv[1], "
                               "isolation_level=None)\ncon.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\n"
                               "time.sleep(600)", str(store)], stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout.readline().strip() == "locked"
        message = usage_error([], tmp_path)
    finally:
        locker.kill()
        locker.wait()
    assert message == (f"ERROR: result store {store}: database is locked: nothing was measured; run again once the "
                       "other process is done with it, or name another --store")
    con = sqlite3.connect(store)
    assert con.execute("SELECT id, status FROM sessions").fetchall() == [(1, "complete")]
    con.close()


def test_a_study_s_default_page_replaces_only_a_page_fsbench_wrote(tmp_path):
    """study-NAME.html beside the store is fsbench's name, but a file of the user's there is kept."""
    results = tmp_path / "fsbench-results"
    results.mkdir()
    page = results / "study-btrfs-options.html"
    page.write_text("my page\n")
    done = fsbench("study", "btrfs-options", "--plan", f"--image-dir={tmp_path / 'images'}", cwd=tmp_path)
    assert one_line_error(done) == (f"fsbench study: the study's page {page} exists and is no report fsbench wrote; "
                                    "name a new file with -o FILE")
    assert page.read_text() == "my page\n"


# --- issue 34, round three's rest -------------------------------------------------------------------------


def test_a_gate_whose_baseline_holds_none_of_the_tests_is_refused_before_measuring(tmp_path):
    """It measured everything first, then said "gated nothing"."""
    saved_baseline(tmp_path / "fsbench.db", "base", runs=6)
    message = usage_error(["--fs=xfs", "--compare=base", "--fail-on-regression=5%"], tmp_path)
    assert message == ("ERROR: --fail-on-regression with --compare=base: its session (1) measured none of this "
                       "session's tests, so the gate would gate nothing after measuring everything (the baseline "
                       "holds test_dd_write[ext4-single-1M]; this session runs test_dd_write[xfs-single-1M], "
                       "test_dd_read[xfs-single-1M]); compare like with like (the same tests, --fs, --layout and "
                       "options), or --save a new baseline")
    assert sessions_in(tmp_path / "fsbench.db") == 1, "no session was recorded"


def test_a_store_that_is_no_store_is_refused_under_collect_only_where_the_user_is(tmp_path):
    """--store=notes.txt was taken relative to pytest's rootdir (another directory's notes.txt)
    and accepted under --collect-only."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for extra in (["--collect-only"], ["--collect-only", "-k", "nothing-matches"], []):
        done = execute_pytest([str(REPO / "benchmarks" / "test_dd.py"), "--store=notes.txt",
                               f"--image-dir={tmp_path / 'images'}", *extra], cwd=tmp_path)
        assert done.returncode == pytest.ExitCode.USAGE_ERROR, (extra, done.stdout[-2000:])
        assert [line for line in done.stderr.splitlines() if line.startswith("ERROR:")] == [
            f"ERROR: {notes} is not an SQLite database, so not an fsbench result store; name another --store"]
    assert notes.read_text() == "my notes\n" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("content", [b"", None])
def test_doctor_calls_an_empty_file_or_a_database_without_tables_a_new_store(tmp_path, content):
    """Sessions use both; doctor called them unusable."""
    store = tmp_path / "fsbench.db"
    if content is None:
        con = sqlite3.connect(store)  # an SQLite file whose tables are all gone
        con.executescript("CREATE TABLE t (x); DROP TABLE t;")
        con.close()
        assert store.read_bytes().startswith(b"SQLite format 3\x00")
    else:
        store.write_bytes(content)
    before = store.read_bytes()
    done = fsbench("doctor", f"--store={store}", f"--image-dir={tmp_path / 'images'}")
    assert (f"store: {store}: a new store (no tables yet); the first session makes its tables there"
            in " ".join(done.stdout.split())), done.stdout  # doctor wraps its lines
    assert store.read_bytes() == before


def test_a_study_whose_options_select_nothing_is_refused(tmp_path):
    """Found by the sweep: -k nothingmatches planned 0 tests and exited 0."""
    done = fsbench("study", "btrfs-options", "--plan", f"--image-dir={tmp_path / 'images'}", "-k", "nothingmatches",
                   cwd=tmp_path)
    message = one_line_error(done)
    assert message.startswith("fsbench study: the study's options select none of its tests (") and (
        "-k nothingmatches); loosen -k or the options that choose the cases" in message)
    assert list(tmp_path.iterdir()) == []


def test_a_study_s_own_selection_and_the_user_s_both_apply(tmp_path):
    """`study btrfs-options --plan -k dd` planned 192 tests instead of 64: pytest kept the last -k."""
    images = f"--image-dir={tmp_path / 'images'}"
    alone = fsbench("study", "btrfs-options", "--plan", images, cwd=tmp_path)
    narrowed = fsbench("study", "btrfs-options", "--plan", images, "-k", "dd", cwd=tmp_path)
    assert alone.returncode == 0 and narrowed.returncode == 0, narrowed.stderr

    def planned(done) -> int:
        return int(next(l for l in done.stdout.splitlines() if " tests x " in l).split()[1])

    command, _ = plan_command(narrowed.stdout)  # its arguments, as a shell reads its lines
    assert command.count("-k") == 1 and command[command.index("-k") + 1].endswith(" and (dd)"), command
    assert command[command.index("-k") + 2] == "--runnable-only", command
    _, prose = plan_command(narrowed.stdout)
    assert any(line.startswith("plan: -k: the study's selection (") and "and yours (dd) both apply" in line
               for line in prose), prose
    assert 0 < planned(narrowed) < planned(alone)


def test_a_study_s_claims_take_the_user_s_max_runs(tmp_path):
    """`study btrfs-options --max-runs=8` was refused: collected before the claims' --until-ci-case
    were added, the session had no dynamic mode for --max-runs to cap."""
    done = fsbench("study", "btrfs-options", "--plan", f"--image-dir={tmp_path / 'images'}", "--max-runs=8",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    command, _ = plan_command(done.stdout)  # its arguments, as a shell reads its lines
    assert [arg for arg in command if arg.startswith("--max-runs")] == ["--max-runs=8"], command
    assert any(arg.startswith("--until-ci-case=") for arg in command), command
    assert "repeat until decided (5 to 8 runs;" in done.stdout


@pytest.fixture
def small_filesystem(tmp_path):
    """A filesystem of 32M of the test's own on a loop device, for a store to fill up."""
    image, mountpoint = tmp_path / "store.img", tmp_path / "storefs"
    mountpoint.mkdir()
    subprocess.run(["truncate", "-s", "32M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mountpoint)], check=True)
    try:
        yield mountpoint
    finally:
        subprocess.run(["chattr", "-R", "-i", str(mountpoint)], capture_output=True)
        subprocess.run(["umount", str(mountpoint)], check=True)


def spoil_after_first_run(store: Path, how: str) -> subprocess.Popen:
    """A process that, once the session has recorded a run, fills the store's filesystem or makes
    the store and its directory immutable."""
    script = ("import sqlite3, subprocess, sys, time, pathlib\n"
              "store, how = pathlib.Path(sys.argv[1]), sys.argv[2]\n"
              "while True:\n"
              "    try:\n"
              "        con = sqlite3.connect(f'file:{store}?mode=ro', uri=True)\n"
              "        if con.execute('SELECT COUNT(*) FROM runs').fetchone()[0] >= 2: break\n"
              "    except sqlite3.Error: pass\n"
              "    time.sleep(0.02)\n"
              "if how == 'fill':\n"
              "    with open(store.parent / 'filler', 'wb') as f:\n"
              "        try:\n"
              "            while True: f.write(b'\\0' * (1 << 20)); f.flush()\n"
              "        except OSError: pass\n"
              "else:\n"
              "    files = [p for p in store.parent.glob(store.name + '*')]\n"
              "    subprocess.run(['chattr', '+i', *map(str, files), str(store.parent)], check=True)\n")
    return subprocess.Popen([sys.executable, "-c", script, str(store), how])


@pytest.mark.root
@pytest.mark.parametrize("how", ["fill", "immutable"])
def test_a_store_spoiled_mid_session_stops_it_in_one_line(tmp_path, small_filesystem, how, no_leftovers):
    """Issue 34: a 76-line chained traceback at teardown, the session left running; made
    immutable, SQLite's checkpoint at close died with SIGBUS. Now one line stops the session,
    recorded interrupted where the store can still be written (a filled one, from the room kept
    for it), and nothing is left."""
    store = small_filesystem / "fsbench.db"
    spoiler = spoil_after_first_run(store, how)
    try:
        done = execute_pytest(["benchmarks/test_dd.py", "--fs=ext4", "--runs=30", "--dd-size=16M",
                               f"--image-dir={tmp_path / 'images'}", f"--store={store}"], cwd=REPO)
    finally:
        spoiler.wait(timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Traceback" not in output and "Bus error" not in output and "pytest_fsbench/" not in output, output[-3000:]
    stopped = [line for line in output.splitlines() if "the session stops here" in line]
    assert any(line.startswith(f"! Interrupted: fsbench: result store {store}: ") for line in stopped), output[-3000:]
    subprocess.run(["chattr", "-R", "-i", str(small_filesystem)], check=True)
    (small_filesystem / "filler").unlink(missing_ok=True)
    con = sqlite3.connect(store)
    status = con.execute("SELECT status FROM sessions").fetchone()[0]
    runs = con.execute("SELECT COUNT(*) FROM runs WHERE warmup = 0").fetchone()[0]
    con.close()
    assert runs >= 1, "the runs recorded before are kept"
    if how == "fill":
        assert status == "interrupted", output[-3000:]
    else:  # nothing could be written: the end is said, and --resume takes a session whose process has ended
        assert status == "running"
        assert f"the session's end could not be recorded (result store {store}: " in output


@pytest.fixture
def small_image_dir(tmp_path):
    """A tmpfs of 720M of the test's own for the images."""
    where = tmp_path / "images"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=720M", f"fsbench-test-{tmp_path.name}", str(where)],
                   check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@pytest.mark.root
def test_an_image_directory_too_small_for_what_a_case_writes_is_refused_up_front(tmp_path, small_image_dir):
    """Issue 34: a 700M image on a 720M tmpfs with a 512M dd started, and failed in 78 lines."""
    done = execute_pytest(["benchmarks/test_dd.py", "--image-size=700M", "--dd-size=512M", "--runs=2",
                           f"--image-dir={small_image_dir}", f"--store={tmp_path / 'fsbench.db'}"], cwd=REPO)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:]
    assert [line for line in done.stderr.splitlines() if line.startswith("ERROR:")] == [
        f"ERROR: --dd-size=512M: ext4-single writes about 512.0M into its loop images and the 512.0M of data fsbench "
        f"prepares for it first, and --image-dir={small_image_dir} has 720.0M free; give a smaller --dd-size, or an "
        "--image-dir with more room"]
    assert list(small_image_dir.iterdir()) == [] and not (tmp_path / "fsbench.db").exists()


@pytest.mark.root
def test_an_image_directory_that_fills_mid_run_is_one_line(tmp_path, small_image_dir, no_leftovers):
    """Room for the case when it started; another process takes it while the run writes."""
    filler = subprocess.Popen(["sh", "-c", 'while ! ls "$1"/*.img >/dev/null 2>&1; do sleep 0.02; done; '
                                           'cat /dev/zero > "$1/filler" 2>/dev/null; true', "filler",
                               str(small_image_dir)])
    try:
        done = execute_pytest(["benchmarks/test_dd.py", "-k", "write", "--image-size=700M", "--dd-size=256M",
                               "--data=zeros", "--runs=3", f"--image-dir={small_image_dir}",
                               f"--store={tmp_path / 'fsbench.db'}"], cwd=REPO)
    finally:
        filler.wait(timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, output[-3000:]
    assert "Traceback" not in output and "pytest_fsbench/" not in output, output[-3000:]
    assert (f"ext4-single: dd failed because --image-dir={small_image_dir} filled up (") in output, output[-3000:]
    assert "so the loop images could not grow (" in output
    assert sorted(p.name for p in small_image_dir.iterdir()) == ["filler"]
    con = sqlite3.connect(tmp_path / "fsbench.db")
    assert con.execute("SELECT status FROM sessions").fetchone()[0] == "failed"
    con.close()


def test_junitxml_never_replaces_the_store_or_a_file_that_is_no_junit_xml(tmp_path):
    """Found by the sweep: pytest's --junitxml=STORE replaced the store with the XML at the end."""
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    kept = store.read_bytes()
    assert usage_error([f"--junitxml={store}"], tmp_path) == (
        f"ERROR: --junitxml={store}: is the result store {store} (or its journal); name another file")
    assert usage_error([f"--junitxml={notes}"], tmp_path) == (
        f"ERROR: --junitxml={notes}: exists and is no JUnit XML file, which pytest would replace; name a new file")
    assert store.read_bytes() == kept and notes.read_text() == "my notes\n"


@pytest.mark.parametrize("given, expected", [
    ("--until-ci-case=test_dd_wrte[ext4-single-1M]=5%", "ERROR: --until-ci-case=test_dd_wrte[ext4-single-1M]: no "
     "selected test is test_dd_wrte[ext4-single-1M], so it would repeat nothing; name a test as pytest "
     "--collect-only -q lists it (its name and [id])"),
    ("--runs=40", "--max-runs"),
])
def test_until_ci_case_mistakes_are_refused_before_building(tmp_path, given, expected):
    """A typo in the test's name repeated nothing, silently; --runs above the budget failed mid-session."""
    args = ["--fs=ext4", given] + ([] if given.startswith("--until") else
                                   ["--until-ci-case=test_dd_write[ext4-single-1M]=5%"])
    message = usage_error(args, tmp_path)
    assert message == expected if expected.startswith("ERROR") else expected in message, message


@pytest.mark.parametrize("command", [["report", "base", "-o", "{fifo}"], ["export", "base", "-o", "{fifo}"],
                                     ["changes", "--figure={fifo}.svg"]])
def test_a_command_s_output_at_a_fifo_is_refused_at_once(tmp_path, special_files, command):
    """Issue 44: blocked before anything was written, then a traceback on Ctrl-C."""
    if command[0] == "changes":
        os.mkfifo(special_files["fifo"] + ".svg")
    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    done = fsbench(*(arg.format(**special_files) for arg in command), f"--store={store}")
    assert "is a FIFO (a named pipe), not a file; name a regular file" in one_line_error(done)


@pytest.mark.root
def test_cleanup_says_what_it_leaves_alone(tmp_path):
    """Issue 44: a run directory with a damaged state file and a name that is no session's: "nothing
    left behind", and it stayed."""
    odd = tmp_path / "notes"
    odd.mkdir()
    (odd / "state.json").write_text('{"image_dir": ')
    done = fsbench("cleanup", f"--run-root={tmp_path}")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "nothing left behind" not in done.stdout
    assert done.stderr.strip() == (f"fsbench cleanup: left alone {odd}: neither its state file nor its name (fsbench's "
                                   "are PID-HEX) tells which session it is, so whether that session still runs cannot "
                                   "be told; look inside and remove it by hand once no fsbench session uses it")
    assert odd.exists()


def test_output_read_by_a_reader_that_leaves_early_ends_without_a_traceback(tmp_path):
    """fsbench sessions | head -1 (issue 44's sweep: a BrokenPipeError's traceback when head had left
    before the last row): the reader's end is closed before fsbench writes, so every write fails."""
    store = tmp_path / "x.db"
    Store(store).close()
    reader = subprocess.Popen([sys.executable, "-m", "pytest_fsbench.cli", "sessions", f"--store={store}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader.stdout.close()
    err = reader.stderr.read()
    assert reader.wait(timeout=120) == 141, err
    assert err == ""


@pytest.mark.parametrize("command, redirect, status, said", [
    ("sessions", "> /dev/full", 1, "fsbench sessions: could not write its output (No space left on device); make room"),
    ("sessions --json", "> /dev/full", 1, "fsbench sessions: could not write its output (No space left on device)"),
    ("sessions", ">&-", 2, "fsbench sessions: its standard output is closed; give it one"),
])
def test_output_that_cannot_be_written_is_one_line(tmp_path, command, redirect, status, said):
    """Issue 44's sweep: stdout at a full device was an OSError's traceback; a closed stdout printed
    nothing and exited 0."""
    store = tmp_path / "x.db"
    Store(store).close()
    done = subprocess.run(["bash", "-c", f'"$0" -m pytest_fsbench.cli {command} --store={store} {redirect}',
                           sys.executable], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == status, done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and done.stderr.startswith(said), done.stderr
