"""settings.py's --shard: a session's cases dealt out into N shares, each case in exactly one;
refused where a share would be empty or would split a comparison made within the session. --save's
budget: a baseline measured to the gate's --max-runs."""

from __future__ import annotations


import pytest

from conftest import settings_of

from pytest_fsbench.errors import UsageError
from pytest_fsbench.settings import BY_FLAG
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
