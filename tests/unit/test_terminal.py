"""The terminal's case lines: the plan's seconds a study passes (pure parts)."""

from pytest_fsbench.terminal import plan_seconds


def test_the_plans_seconds_are_a_json_object_of_numbers_or_nothing():
    assert plan_seconds('{"test_iozone": 4.35, "test_dd_write": 1}') == {"test_iozone": 4.35, "test_dd_write": 1.0}
    assert plan_seconds(None) == {} and plan_seconds("not json") == {} and plan_seconds("[1, 2]") == {}
    assert plan_seconds('{"test_iozone": "slow"}') == {}
