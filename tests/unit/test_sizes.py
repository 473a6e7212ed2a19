"""The ground's size helpers."""

from pytest_fsbench.sizes import existing_ancestor


def test_a_directory_not_yet_made_is_placed_on_its_nearest_existing_parent(tmp_path):
    assert existing_ancestor(tmp_path) == tmp_path
    assert existing_ancestor(tmp_path / "images" / "deeper") == tmp_path
    (tmp_path / "images").mkdir()
    assert existing_ancestor(tmp_path / "images" / "deeper") == tmp_path / "images"
