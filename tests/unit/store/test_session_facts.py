"""What a session ran, as `fsbench sessions` says it (store.facts.selection, ran, ran_text)."""

from pytest_fsbench.store.facts import ran, ran_text, selection


def test_the_selection_is_the_test_paths_and_the_k_and_m_expressions():
    argv = ["benchmarks/test_dd.py", "-k", "write and not read", "--fs", "ext4", "-mnot slow", "-p", "no:cacheprovider",
            "benchmarks/test_fio.py::test_fio", "--runs=3", "-v"]
    assert selection(argv, {"--fs"}) == {"files": ["benchmarks/test_dd.py", "benchmarks/test_fio.py::test_fio"],
                                         "-k": "write and not read", "-m": "not slow"}
    assert selection([]) == {"files": []}


def test_a_session_says_what_it_asked_for_or_what_its_cases_were():
    asked = {"filesystems": ["ext4", "btrfs"], "layouts": ["single", "raid1"], "options": ["btrfs:compress=zstd"],
             "paired": [], "kernels": ["host", "uml"], "selection": {"files": ["benchmarks/test_dd.py"], "-k": "write"}}
    found = ran({"argv": [], "ran": asked}, {"kernel": "6.1.0-13-amd64"}, [{"fs": "ext4", "layout": "single",
                                                                         "id": "ext4-single"}], 2)
    assert found["measured"] == ["ext4-single"] and found["kernel"] == "6.1.0-13-amd64" and found["tests"] == 2
    assert ran_text(found) == ("ext4,btrfs x single,raid1; options btrfs:compress=zstd; tests benchmarks/test_dd.py "
                               "-k write; kernel host+uml (6.1.0-13-amd64), 2 tests recorded")
    before = ran({"argv": ["benchmarks/test_dd.py", "-m", "not slow"]}, {},
                 [{"fs": "zfs", "layout": "raid1", "options": {"compression": "lz4"}, "id": "zfs-raid1"}])
    assert ran_text(before) == ("zfs x raid1; options zfs:compression=lz4; tests benchmarks/test_dd.py -m 'not slow'; "
                                "kernel host, 0 tests recorded")
