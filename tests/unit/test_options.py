"""options.check_replaceable (issue 34): what an output of fsbench's may be written over."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pytest_fsbench.options import check_replaceable, directory_for_files, output_mark


def database(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    return path


def refused(where: Path, kind: str = "report", stores=(), force: bool = False) -> str:
    with pytest.raises(ValueError) as raised:
        check_replaceable(where, kind, stores, force)
    return str(raised.value)


def test_the_store_in_use_is_refused_even_before_it_exists_and_even_with_force(tmp_path):
    store = tmp_path / "fsbench.db"
    assert "is the result store" in refused(store, stores=[store], force=True)
    database(store)
    assert "is the result store" in refused(tmp_path / "." / "fsbench.db", stores=[store], force=True)
    assert "is the result store" in refused(tmp_path / "fsbench.db-wal", stores=[store])


def test_a_symlink_to_the_store_is_the_store(tmp_path):
    store = database(tmp_path / "fsbench.db")
    (tmp_path / "link.html").symlink_to(store)
    assert "is the result store" in refused(tmp_path / "link.html", stores=[store])


def test_any_sqlite_database_and_its_journal_are_refused_even_with_force(tmp_path):
    other = database(tmp_path / "team.sqlite")
    assert "is an SQLite database" in refused(other, force=True)
    assert "is the journal of the SQLite database team.sqlite" in refused(tmp_path / "team.sqlite-wal", force=True)


def test_a_file_fsbench_did_not_write_is_replaced_only_with_force(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert refused(notes, "export") == "exists and is no export fsbench wrote; name a new file, or pass --force " \
                                       "to replace it"
    check_replaceable(notes, "export", force=True)


def test_a_file_of_another_kind_of_output_is_not_this_one(tmp_path):
    page = tmp_path / "r.html"
    page.write_text(f"<meta name='generator' content='{output_mark('report')}'>")
    check_replaceable(page, "report")
    assert "is no export fsbench wrote" in refused(page, "export")


def test_a_new_or_empty_file_holds_nothing_to_lose(tmp_path):
    check_replaceable(tmp_path / "new.html", "report", [tmp_path / "fsbench.db"])
    (tmp_path / "empty.html").write_bytes(b"")
    check_replaceable(tmp_path / "empty.html", "report")


def test_a_server_store_is_no_file(tmp_path):
    check_replaceable(tmp_path / "r.html", "report", ["postgresql://me@db.example/fsbench"])


def test_a_name_longer_than_a_file_name_may_be_is_refused():
    """Issue 34, found by the sweep: File name too long reached the user as an INTERNALERROR."""
    from pytest_fsbench.options import path

    assert path("/tmp/" + "x" * 255) == Path("/tmp/" + "x" * 255)
    with pytest.raises(ValueError, match="longer than the 255 bytes"):
        path("/tmp/" + "x" * 256 + "/a.db")


def test_a_directory_named_by_a_dangling_link_is_refused_naming_where_it_points(tmp_path):
    """Issue 44's sweep: publish DIR, report --figures and --image-dir at a link to nothing were a
    FileExistsError's traceback (making the directory met the link)."""
    link = tmp_path / "site"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(ValueError, match=f"is a link to {tmp_path / 'gone'}, which does not exist; make that"):
        directory_for_files(str(link))
    (tmp_path / "gone").mkdir()
    assert directory_for_files(str(link)) == link
