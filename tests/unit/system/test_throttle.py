"""--storage-rate's rates and its token bucket: N bytes paced to R bytes a second take at least
N / R seconds from the first, less the burst an idle storage keeps, whatever the sizes and however
many ask at once. The clock is the bucket's own, advanced by its waits, not the machine's."""

from __future__ import annotations

import threading

import pytest

from pytest_fsbench.system.throttle import MB, TokenBucket, parse_rate, rate_text


@pytest.mark.parametrize("text, rate", [("32", 32.0), ("32M", 32.0), ("32MB/s", 32.0), (" 31.6 MB/s ", 31.6),
                                        ("64MBps", 64.0), ("none", 0.0), ("NONE", 0.0)])
def test_a_rate_is_mb_a_second(text, rate):
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text, message", [("fast", "give a rate in MB/s"), ("32G", "give a rate in MB/s"),
                                           ("-5", "give a rate in MB/s"), ("0", "from 1 to 10000 MB/s"),
                                           ("0.5", "from 1 to 10000 MB/s"), ("20000", "from 1 to 10000 MB/s")])
def test_a_rate_fsbench_cannot_emulate_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_rate(text)


def test_a_rate_reads_as_a_claim_names_it():
    assert rate_text(32.0) == "32 MB/s" and rate_text(31.6) == "31.6 MB/s" and rate_text(0.0) == ""


class Clock:
    """The bucket's time: advanced only by its own waits."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_n_bytes_take_at_least_n_over_the_rate():
    clock = Clock()
    bucket = TokenBucket(32 * MB, 0.01, clock, clock.sleep)
    for size in (131072,) * 256 + (4096,) * 100:  # 32 MiB in 128K writes, then small ones
        bucket.take(size)
    moved = 256 * 131072 + 100 * 4096
    assert clock.now - 100.0 == pytest.approx(moved / (32 * MB) - 0.01)
    assert bucket.waited == pytest.approx(moved / (32 * MB) - 0.01)


def test_a_request_that_spends_time_outside_the_pacing_does_not_slow_the_storage():
    """One request after another, each a millisecond in the kernel and libfuse besides its wait:
    the burst keeps their time off the storage's, which moves its rate (without it, 128K at 50
    MB/s every 3.6 ms instead of 2.6: 36 MB/s)."""
    clock = Clock()
    bucket = TokenBucket(50 * MB, 0.01, clock, clock.sleep)
    for _ in range(400):
        bucket.take(131072)
        clock.now += 0.001
    assert 400 * 131072 / (clock.now - 100.0) == pytest.approx(50 * MB, rel=0.01)


def test_an_idle_storage_saves_no_credit():
    clock = Clock()
    bucket = TokenBucket(10 * MB, 0.01, clock, clock.sleep)
    bucket.take(MB)
    clock.now += 60.0  # a minute without I/O
    assert bucket.take(MB) == pytest.approx(0.09)  # the next megabyte still takes its tenth of a second, less 10 ms


def test_transfers_asking_at_once_share_the_rate():
    """Four threads, each 2 MB through one bucket of 8 MB/s, with the clock standing still: each
    transfer is owed the time of all that asked before it, so the next is owed the whole 8 MB's
    second, as on one disk."""
    clock = Clock()
    bucket = TokenBucket(8 * MB, 0.0, clock, lambda seconds: None)
    threads = [threading.Thread(target=lambda: [bucket.take(MB // 4) for _ in range(8)]) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert bucket.take(0) == pytest.approx(1.0)


def test_a_rate_of_nothing_is_refused():
    with pytest.raises(ValueError, match="a rate above 0 bytes a second"):
        TokenBucket(0)
