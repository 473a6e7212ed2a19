"""settings.py's --shard: a session's cases dealt out into N shares, each case in exactly one;
refused where a share would be empty or would split a comparison made within the session. --save's
budget: a baseline measured to the gate's --max-runs."""

from __future__ import annotations


import pytest

from conftest import settings_of

from pytest_fsbench.errors import UsageError
from pytest_fsbench.settings import BY_FLAG, check
from pytest_fsbench.system.host import Host

HOST = Host("6.1.0", frozenset({"ext4", "xfs", "btrfs"}),
            frozenset({"mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "btrfs", "mdadm"}), has_md=True,
            zfs_module=False, is_root=True, ram_bytes=8 << 30)


def settings(**given):
    return settings_of(HOST, **given)


def test_the_shares_hold_every_case_once():
    whole = [spec.id for spec in settings(**{"--fs": "ext4,xfs,btrfs", "--layout": "single,raid1"}).specs]
    shares = [[spec.id for spec in settings(**{"--fs": "ext4,xfs,btrfs", "--layout": "single,raid1",
                                                "--shard": f"{k}/4"}).specs] for k in range(4)]
    assert sorted(i for share in shares for i in share) == sorted(whole) and len(whole) == 6
    assert [len(share) for share in shares] == [2, 2, 1, 1]
    assert settings(**{"--fs": "ext4,xfs", "--shard": "0/1"}).specs == settings(**{"--fs": "ext4,xfs"}).specs


@pytest.mark.parametrize("text", ["3/3", "1", "a/b", "-1/2", "1/0"])
def test_a_share_is_k_of_n_counted_from_0(text):
    with pytest.raises(UsageError, match=rf"--shard='{text}': give K/N, share K of N counted from 0"):
        BY_FLAG["--shard"].value(text)


def test_no_empty_share_and_no_split_comparison():
    with pytest.raises(UsageError, match=r"--shard=2/3: this session has 2 case\(s\), fewer than 3 shares"):
        settings(**{"--fs": "ext4,xfs", "--shard": "2/3"})
    with pytest.raises(UsageError, match=r"--shard=0/2 with a paired comparison"):
        settings(**{"--fs": "btrfs", "--paired": ["btrfs:compress=zstd"], "--runs": "10", "--shard": "0/2"})


def test_a_baseline_is_measured_to_the_gates_budget():
    """--save alone measures --max-runs runs a case (its runs fix the power of every later
    comparison); --runs, --compare or an interleaved session keep their own count (issue 32)."""
    saved = settings(**{"--fs": "ext4", "--save": "base"})
    assert (saved.repeat.runs, saved.save_budget) == (30, True)
    assert settings(**{"--fs": "ext4", "--save": "base", "--max-runs": "20"}).repeat.runs == 20
    assert settings(**{"--fs": "ext4", "--save": "base", "--runs": "12"}).repeat.runs == 12
    given = settings_of(HOST, **{"--fs": "ext4", "--save": "base", "--runs": "10"})
    assert given.repeat.runs == 30  # the default's value, not on the command line: the budget
    on_the_line = settings_of(HOST, ("--save=base", "--runs=10"), **{"--fs": "ext4", "--save": "base", "--runs": "10"})
    assert (on_the_line.repeat.runs, on_the_line.save_budget) == (10, False)
    assert settings(**{"--fs": "ext4", "--save": "base", "--compare": "base"}).repeat.runs == 10
    assert settings(**{"--fs": "ext4", "--save": "base", "--until-ci": "3%"}).repeat.runs == 10
    assert settings(**{"--fs": "ext4"}).repeat.runs == 10


def test_until_ci_case_gives_one_test_its_own_precision_and_leaves_the_others_their_runs():
    given = settings(**{"--fs": "ext4", "--runs": "5", "--until-ci-case": ["test_dd_write[ext4-single-1M]=5%"],
                        "--max-runs": "20"})
    own = given.repeat_for("pkg/test_dd.py::test_dd_write[ext4-single-1M]")
    assert (own.until_ci, own.runs, own.max_runs, own.dynamic) == (5.0, 5, 20, True)
    other = given.repeat_for("pkg/test_dd.py::test_dd_read[ext4-single-1M]")
    assert (other.until_ci, other.dynamic) == (None, False)
    assert given.dynamic  # so --max-runs is its budget, not refused
    assert own.until_ci_metrics == ()  # every headline metric
    named = settings(**{"--fs": "ext4", "--until-ci-case": ["test_iozone[ext4-single-16M]@iozone.write,iozone.read=5%"]})
    assert named.repeat_for("p::test_iozone[ext4-single-16M]").until_ci_metrics == ("iozone.write", "iozone.read")
    with pytest.raises(UsageError, match=r"no workload measures a metric 'iozone.wrte'"):
        settings(**{"--fs": "ext4", "--until-ci-case": ["test_iozone[ext4-single-16M]@iozone.wrte=5%"]})


@pytest.mark.parametrize("text", ["5%", "test_dd_write=5%", "test_dd_write[ext4-single-1M]", "[x]=5%",
                                  "test_dd_write[ext4-single-1M]=150%", "test_iozone[btrfs-compress=zlib]",
                                  "test_iozone[ext4-single-16M]@write=5%"])
def test_until_ci_case_needs_a_test_id_and_a_percentage(text):
    with pytest.raises(UsageError, match=r"--until-ci-case="):
        BY_FLAG["--until-ci-case"].value(text)


def test_until_ci_case_once_per_test_and_never_interleaved():
    with pytest.raises(UsageError, match=r"test_dd_write\[ext4-single-1M\] is given twice"):
        settings(**{"--fs": "ext4", "--until-ci-case": ["test_dd_write[ext4-single-1M]=5%",
                                                        "test_dd_write[ext4-single-1M]=3%"]})
    with pytest.raises(UsageError, match="--interleave makes one measured run per round"):
        settings(**{"--fs": "ext4", "--interleave": True, "--until-ci-case": ["test_dd_write[ext4-single-1M]=5%"]})


def test_until_ci_case_keeps_a_saved_baseline_to_its_own_runs_and_is_checked_before_anything_runs():
    saved = settings(**{"--fs": "ext4", "--save": "base", "--until-ci-case": ["test_dd_write[ext4-single-1M]=5%"]})
    assert (saved.repeat.runs, saved.save_budget) == (10, False)  # the precision decides, not the gate's budget
    with pytest.raises(UsageError, match="--max-runs"):
        check(settings(**{"--fs": "ext4", "--runs": "40", "--until-ci-case": ["test_dd_write[ext4-single-1M]=5%"]}))


def test_what_a_session_ran_names_its_tests_not_a_workload_parameters_value():
    from pytest_fsbench.session import ran_record
    line = ("benchmarks/test_dd.py", "--dd-size", "64M", "-k", "write", "--fs", "ext4")
    ran = ran_record(settings_of(HOST, line, **{"--fs": "ext4"}))
    assert ran["selection"] == {"files": ["benchmarks/test_dd.py"], "-k": "write"}


def test_a_storage_rate_list_makes_each_case_once_per_rate():
    """--storage-rate=none,32: each case on the images' own storage and on storage paced to 32
    MB/s, the rate in its id and its stored spec; one rate paces every case."""
    found = settings(**{"--fs": "btrfs,ext4", "--storage-rate": "none,32"})
    assert [spec.id for spec in found.specs] == ["btrfs-single", "btrfs-single-storage=32MBps",
                                                 "ext4-single", "ext4-single-storage=32MBps"]
    assert found.storage_rates == (0.0, 32.0)
    assert found.specs[1].to_dict()["storage_rate"] == 32.0 and "storage_rate" not in found.specs[0].to_dict()
    assert [spec.id for spec in settings(**{"--storage-rate": "31.6"}).specs] == ["ext4-single-storage=31.6MBps"]
    assert settings().storage_rates == (0.0,) and [spec.id for spec in settings().specs] == ["ext4-single"]


@pytest.mark.parametrize("given, message", [
    ({"--storage-rate": "32", "--kernel": "host+uml"}, "--storage-rate=32 with --kernel=host+uml: the rate is emulated "
                                                       "on the host's loop images, a guest kernel has its own"),
    ({"--storage-rate": "none,32", "--devices": "/dev/sdz"}, "--storage-rate=none,32 with --devices: the rate is "
                                                             "emulated on loop images"),
    ({"--storage-rate": "32,32MB/s"}, "--storage-rate: '32' and '32MB/s' are one value (32 MB/s); give it once"),
])
def test_a_storage_rate_fsbench_cannot_pace_is_refused(given, message):
    with pytest.raises(UsageError) as raised:
        settings(**given)
    assert message in str(raised.value)
