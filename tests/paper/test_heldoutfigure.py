"""The held-out figure's data: every point a model had to predict, predicted ÷ measured with its interval, named by
its study, model and configuration; tests without points, or points without a positive prediction, add no row."""
import math

import pytest

from snaptax.models import heldout as ho
from snaptax.paper import heldoutfigure as hf


def _point(label, predicted, measured, se=0.02, dof=5):
    return ho.PointError(label, predicted, se, dof, measured, se, dof, 3)


def test_points_of_one_test_and_of_a_mapping_of_tests():
    single = ho.judge([_point("k1", 110.0, 100.0)], 6, "durations")
    per_config = {("on-disk-metadata", "randrw"): ho.judge([_point("n3", 500.0, 1000.0), _point("n4", 90.0, 100.0)],
                                                           4, "IOPS"),
                  ("lvm-thin", "randrw"): ho.judge([], 4, "IOPS", not_tested="nothing held out")}
    frame = hf.points_frame({"db_snapshots": single, "chain_length": per_config, "engines": None})
    assert len(frame) == 3 and set(frame.study) == {"db_snapshots", "chain_length"}
    db = frame[frame.study == "db_snapshots"].iloc[0]
    assert db.ratio == pytest.approx(1.1) and db.low < 1.1 < db.high
    assert db.test == hf.MODEL_NAMES[("db_snapshots", "copy_work")].label
    chain = frame[frame.point == "n3"].iloc[0]
    assert chain.ratio == pytest.approx(0.5) and "on-disk-metadata" in chain.test and "randrw" in chain.test
    assert chain.verdict == ho.DESCRIPTIVE                       # a point 50 % off
    assert frame.row.is_unique


def test_a_point_without_a_positive_prediction_or_an_interval():
    h = ho.judge([_point("bad", -5.0, 100.0), _point("bare", 100.0, 100.0, se=math.nan)], 4, "IOPS")
    frame = hf.points_frame({"chain_length": {("a", "b"): h}})
    assert list(frame.point) == ["bare"] and math.isnan(frame.iloc[0].low)


def test_memory_dump_keys_name_the_model_and_the_role():
    h = ho.judge([_point("p64-w25", 30.0, 33.0)], 10, "dump times")
    frame = hf.points_frame({"memory_dump": {("raid1_10k", "after"): h}})
    assert frame.iloc[0].test == f"{hf.MODEL_NAMES[('memory_dump', 'after')].label} (raid1_10k)"
    assert hf.chart(frame).to_dict()["layer"]           # builds
    assert frame.iloc[0].bound == ho.BOUND
