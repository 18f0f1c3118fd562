"""The typed reading and writing of a study's run parameters (studyparams) on a record of every supported kind."""
import math
from dataclasses import dataclass

import pytest

from snaptax.errors import ConfigError
from snaptax.studyparams import StudyParameters
from tests.parameters import SOURCE, assert_missing_is_named, assert_round_trip, manifest_json


@dataclass(frozen=True)
class Inner:
    size: int
    grains: tuple[int, ...]


@dataclass(frozen=True)
class Example(StudyParameters):
    device: str
    count: int
    seconds: float
    flag: bool
    names: tuple[str, ...]
    point: tuple[int, float]
    by_name: dict[str, float]
    inner: Inner
    optional: Inner | None
    late: int


EXAMPLE = Example(device="ssd", count=3, seconds=2.5, flag=True, names=("a", "b"), point=(64, 25),
                  by_name={"x": 0.5}, inner=Inner(4096, (1, 2)), optional=Inner(1, ()), late=9)


def test_to_json_is_plain_json_and_reads_back_as_the_same_record():
    assert manifest_json(EXAMPLE) == EXAMPLE.to_json() == {
        "device": "ssd", "count": 3, "seconds": 2.5, "flag": True, "names": ["a", "b"], "point": [64, 25],
        "by_name": {"x": 0.5}, "inner": {"size": 4096, "grains": [1, 2]}, "optional": {"size": 1, "grains": []},
        "late": 9}
    assert_round_trip(EXAMPLE)


def test_a_missing_key_is_one_error_naming_it_also_inside_a_nested_record():
    assert_missing_is_named(EXAMPLE, "count")
    assert_missing_is_named(EXAMPLE, "inner.grains")


@pytest.mark.parametrize("key, value, expected", [
    ("count", "3", "expected an integer, got str '3'"),
    ("count", True, "expected an integer, got bool True"),
    ("count", 3.0, "expected an integer, got float 3.0"),
    ("seconds", "2.5", "expected a number, got str '2.5'"),
    ("flag", 1, "expected true or false, got int 1"),
    ("names", "ab", "expected a list, got str 'ab'"),
    ("point", [64], "expected a list of 2, got list [64]"),
    ("by_name", [], "expected a mapping, got list []"),
])
def test_a_mistyped_key_is_one_error_naming_it_and_the_value(key, value, expected):
    d = {**EXAMPLE.to_json(), key: value}
    with pytest.raises(ConfigError) as err:
        Example.from_json(d, SOURCE)
    assert str(err.value) == f"{SOURCE}: field '{key}': {expected}"


def test_an_element_is_named_by_its_index_and_a_long_value_is_cut_to_one_line():
    with pytest.raises(ConfigError, match=r"field 'names\[1\]': expected a string, got int 2$"):
        Example.from_json({**EXAMPLE.to_json(), "names": ["a", 2]}, SOURCE)
    with pytest.raises(ConfigError) as err:
        Example.from_json({**EXAMPLE.to_json(), "by_name": "x\n" * 100}, SOURCE)
    assert "\n" not in str(err.value) and str(err.value).endswith("...")


def test_an_optional_field_left_out_is_none_and_other_keys_are_refused():
    """No defaults for older runs here (record.upgrade is the one place that knows them): a missing required field
    is an error, an optional one absent is None (to_json leaves a None out), an unknown key is refused."""
    d = EXAMPLE.to_json()
    del d["optional"]
    back = Example.from_json(d, SOURCE)
    assert back.optional is None and "optional" not in back.to_json()
    del d["late"]
    with pytest.raises(ConfigError, match="field 'late': missing"):
        Example.from_json(d, SOURCE)
    with pytest.raises(ConfigError, match="field 'typo': unknown field"):
        Example.from_json({**d, "typo": 1}, SOURCE)
    with pytest.raises(ConfigError, match="field 'parameters': expected a mapping"):
        Example.from_json([], SOURCE)


def test_a_number_keeps_the_type_json_gave_it():
    """A float field holding a JSON integer stays that int: what analyses compute from it does not change."""
    p = Example.from_json({**EXAMPLE.to_json(), "seconds": 60}, SOURCE)
    assert p.seconds == 60 and isinstance(p.seconds, int)
    assert math.isnan(Example.from_json({**EXAMPLE.to_json(), "seconds": math.nan}, SOURCE).seconds)
