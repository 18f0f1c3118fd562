"""Values: keys, printing, intervals, and derived values' round trip (the \\val lookup: tests/paper/test_macros.py)."""
import json
import math

import pytest

from snaptax.values import DerivedValues, DerivedValuesFormatError, Value


def test_keys_are_dotted_and_start_with_a_study():
    Value("chain_length.loss.on-disk-metadata.randrw", 1.0)
    with pytest.raises(ValueError):
        Value("NoDots", 1.0)


def test_formatting_with_interval_and_text():
    v = Value("s.x", 12.345, "%", 10.0, 14.5, 3, digits=1)
    assert v.formatted() == "12.3" and v.formatted_ci() == "12.3 [10.0, 14.5]"
    assert Value("s.t", text="run-1").formatted() == "run-1"
    assert Value("s.n", math.nan).formatted() == "n/a"


def test_a_value_that_rounds_to_zero_prints_without_a_sign():
    # the sign of 3.3e-16 against -1e-16 is in the last bits, which differ between hosts
    assert Value("s.z", -1e-16, digits=2).formatted() == "0.00" == Value("s.z", 3.3e-16, digits=2).formatted()
    assert Value("s.z", -0.4).formatted() == "0" and Value("s.z", -0.6).formatted() == "-1"
    assert Value("s.z", -0.004, "", -0.01, 0.001, 3, 2).formatted_ci() == "0.00 [-0.01, 0.00]"


def test_results_round_trip_and_version_check():
    r = DerivedValues("s", "run", "local", "quick")
    r.add([Value("s.x", 1.5, "%", 1.0, 2.0, 3, 1), Value("s.t", text="a_b")])
    back = DerivedValues.from_json(json.loads(json.dumps(r.to_json())))
    assert back.values["s.x"] == r.values["s.x"] and back.values["s.t"].text == "a_b"
    with pytest.raises(DerivedValuesFormatError, match="version 99"):
        DerivedValues.from_json({"format": "snaptax-derived-values", "format_version": 99}, "cache.json")


@pytest.mark.parametrize("low, high, side", [(0.5, 0.8, "lies below 1"), (0.5, 1.4, "includes 1"),
                                             (1.0, 1.4, "includes 1"), (1.1, 1.4, "lies above 1"),
                                             (math.nan, math.nan, "has no interval")])
def test_side_of_reads_the_interval_against_a_reference(low, high, side):
    assert Value("study.ratio", 0.7, "×", low, high, 4).side_of(1.0) == side


def test_an_open_end_prints_in_words_and_survives_the_round_trip():
    """±inf: a profile likelihood that stays within its cut on that side (a bandwidth without an upper end), printed
    in words rather than as a giant number, kept through strict JSON, and not judged as an interval."""
    v = Value("s.bw", 120.0, "MiB/s", 80.0, math.inf, 10, 1)
    assert v.formatted_ci() == "120.0 [80.0, no upper end]"
    assert Value("s.d", -1.0, "ms", -math.inf, 2.0, 5, 1).formatted_ci() == "-1.0 [no lower end, 2.0]"
    assert Value("s.x", 1.0, "", math.nan, 2.0).formatted_ci() == "1"          # a nan end: no interval
    assert not v.has_interval and not v.includes(100.0) and v.side_of(1.0) == "has no interval"
    r = DerivedValues("s", "run", "local", "quick")
    r.add([v, Value("s.d", -1.0, "ms", -math.inf, 2.0, 5, 1)])
    back = DerivedValues.from_json(json.loads(json.dumps(r.to_json(), allow_nan=False)))
    assert back.values == r.values and back.values["s.bw"].high == math.inf
