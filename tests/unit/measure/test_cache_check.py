"""The cache check: each figure's bytes against what reached the disks (pure)."""

import json

from pytest_fsbench.measure import cache_check
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import Series, SeriesKey

MB = 1_000_000


def figure(name: str, kind: str, nbytes: int, **params: str) -> Metric:
    return Metric(name, 100.0, "MB/s", Direction.HIGHER, dict(params), io=(kind, nbytes))


def shares(metrics, read=0.0, write=0.0, ratio=None) -> dict[str, float]:
    return {m.params["metric"]: round(m.value, 1) for m in cache_check.shares(metrics, read, write, ratio)}


def test_a_read_the_disks_did_not_see_is_from_cache():
    assert shares([figure("dd.read", "read", 256 * MB)], read=0.0) == {"dd.read": 0.0}
    assert shares([figure("dd.read", "read", 256 * MB)], read=256 * MB) == {"dd.read": 100.0}


def test_figures_take_the_disks_bytes_in_the_order_they_ran():
    # IOzone's read then reread of one 8 MB file: the disks saw it once
    metrics = [figure("iozone.read", "read", 8 * MB), figure("iozone.reread", "read", 8 * MB)]
    assert shares(metrics, read=8.2 * MB) == {"iozone.read": 100.0, "iozone.reread": 2.5}


def test_reads_and_writes_are_counted_apart():
    metrics = [figure("iozone.random_read", "read", 8 * MB), figure("iozone.random_write", "write", 8 * MB)]
    assert shares(metrics, read=8 * MB, write=0.0) == {"iozone.random_read": 100.0, "iozone.random_write": 0.0}


def test_compressed_data_needs_fewer_bytes():
    metrics = [figure("dd.write", "write", 200 * MB), figure("dd.other", "write", 200 * MB)]
    assert shares(metrics, write=200 * MB, ratio=2.0) == {"dd.write": 100.0, "dd.other": 100.0}
    assert shares(metrics, write=200 * MB, ratio=0.5) == {"dd.write": 100.0, "dd.other": 0.0}


def test_a_figure_of_reads_and_writes_needs_both():
    # Filebench's IO Summary: 100 MB read and 50 MB written at once; the disks saw 10 MB read and
    # every byte written
    mixed = Metric("filebench.mb_per_s", 30.0, "MB/s", Direction.HIGHER,
                   io=(("read", 100 * MB), ("write", 50 * MB)))
    assert shares([mixed], read=10 * MB, write=80 * MB) == {"filebench.mb_per_s": 40.0}
    assert shares([mixed], read=0.0, write=0.0) == {"filebench.mb_per_s": 0.0}
    assert shares([mixed], read=100 * MB, write=50 * MB, ratio=2.0) == {"filebench.mb_per_s": 100.0}
    nothing = Metric("filebench.mb_per_s", 0.0, "MB/s", Direction.HIGHER, io=(("read", 0), ("write", 0)))
    assert cache_check.shares([nothing], MB, MB) == []


def test_figures_of_the_same_bytes_get_one_share():
    mb = Metric("filebench.mb_per_s", 30.0, "MB/s", Direction.HIGHER, {"k": "v"}, io=(("read", 100 * MB),))
    ops = Metric("filebench.ops_per_s", 9.0, "ops/s", Direction.HIGHER, {"k": "v"}, same_io_as=mb.name)
    ms = Metric("filebench.ms_per_op", 1.0, "ms", Direction.LOWER, {"k": "v"}, same_io_as=mb.name)
    found = cache_check.shares([mb, ops, ms], 25 * MB, 0.0)
    assert [(m.params["metric"], m.value, m.params["k"]) for m in found] == [
        ("filebench.mb_per_s", 25.0, "v"), ("filebench.ops_per_s", 25.0, "v"),
        ("filebench.ms_per_op", 25.0, "v")]
    # not the same bytes when the params differ, nor when the named figure is not before it
    other = Metric("filebench.ops_per_s", 9.0, "ops/s", Direction.HIGHER, {"k": "w"}, same_io_as=mb.name)
    assert shares([other, mb, ops], read=100 * MB) == {"filebench.mb_per_s": 100.0,
                                                       "filebench.ops_per_s": 100.0}
    assert len(cache_check.shares([other, mb], 0.0, 0.0)) == 1


def test_figures_without_io_are_not_checked():
    plain = Metric("dbench.throughput", 1.0, "MB/s", Direction.HIGHER)
    assert cache_check.shares([plain], 0.0, 0.0) == []


def test_the_share_series_is_found_beside_its_figure():
    key = SeriesKey("t", "iozone", "{}", "iozone.read", json.dumps({"record": "64K"}))
    read = Series(key, "ext4-single", "MB/s", Direction.HIGHER, (1.0, 2.0))
    share = Series(SeriesKey("t", "iozone", "{}", "disk.share",
                             cache_check.share_key("iozone.read", key.params)),
                   "ext4-single", "%", Direction.HIGHER, (3.0, 1.0, 2.0))
    assert cache_check.figure_share(cache_check.share_index([read, share]), read) == 2.0
    assert cache_check.figure_share(cache_check.share_index([read]), read) is None


def test_labels_and_notes():
    assert cache_check.source_label(None) == ""
    assert cache_check.source_label(80.0) == "storage"
    assert cache_check.source_label(10.0) == "cache"
    assert cache_check.cache_note(80.0) == ""
    assert cache_check.cache_note(2.4) == "served from cache: 2% of its bytes reached the disks"
    assert "as --cache=warm asks" in cache_check.cache_note(0.0, "warm")
