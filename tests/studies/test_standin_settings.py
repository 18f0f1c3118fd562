"""Seed 000's redo-log stand-in at the rig's inferred operating point (snaptax.studies.standin_settings), as the
lifecycle and calibration studies configure and record it."""
from __future__ import annotations

from fractions import Fraction

import pytest

from snaptax import operatingpoints as op, profiles
from snaptax.engines.qcow2 import L2_SLICE, nearest_coverage
from snaptax.studies import standin_settings as ss
from snaptax.studies.calibration import plan as calplan
from snaptax.studies.lifecycle import plan as lifeplan

GiB = 1 << 30
POINT = op.OperatingPoint("esx35_redolog", 0.30, 0.10, 0.45, "metadata_cache/r", "lifecycle.C000-1b")


@pytest.fixture
def inferred(monkeypatch):
    monkeypatch.setattr(op, "read", lambda rig: {"esx35_redolog": POINT} if rig == "inferred" else {})


def test_no_cache_at_all_is_qemu_s_two_slices():
    assert nearest_coverage(0.0, GiB) == Fraction(2, 64)


def test_the_stand_in_keeps_its_preset_where_nothing_is_inferred_and_records_no_point(inferred):
    assert ss.coverage("bare", "esx35_redolog", GiB, Fraction(1)) == (Fraction(1), None)
    values = {v.key: v for v in ss.operating_point_values("s", "esx35_redolog", Fraction(1, 8), None)}
    assert values["s.coverage"].value == 0.125 and values["s.coverage_source"].text == "preset"
    assert "s.coverage_inferred" not in values


def test_the_stand_in_measures_at_the_inferred_point_in_whole_slices_and_says_where_it_comes_from(inferred):
    c, used = ss.coverage("inferred", "esx35_redolog", GiB, Fraction(1))
    assert c == Fraction(19, 64) and used is not None and used.realised == 19 / 64 and used.inferred == 0.30
    values = {v.key: v for v in ss.operating_point_values("s", "esx35_redolog", Fraction(1), (used,))}
    assert values["s.coverage"].value == 19 / 64
    assert values["s.coverage_source"].text == "inferred from metadata_cache/r"
    assert (values["s.coverage_inferred"].low, values["s.coverage_inferred"].high) == (0.10, 0.45)
    # another stand-in's point in the run does not stand for this one
    other = op.UsedPoint("vmfs_sesparse", 0.9, 0.8, 0.95, "metadata_cache/r", 0.9)
    assert ss.operating_point_values("s", "esx35_redolog", Fraction(1), (other,))[1].text == "preset"


def test_lifecycle_s_delta_and_calibration_s_overlay_take_the_coverage_and_record_the_point(inferred):
    s = lifeplan.scale(profiles.get("quick"))
    assert lifeplan.qcow2_config(s).name == "in-memory-metadata"            # the preset: every table cached
    c, used = ss.coverage("inferred", lifeplan.STAND_IN, s.disk_bytes, lifeplan.PRESET_COVERAGE)
    cfg = lifeplan.qcow2_config(s, c)
    assert cfg.name == "esx35-redo-log" and cfg.l2_cache_size == round(c * cfg.l2_bytes_for(s.disk_bytes)) // \
        L2_SLICE * L2_SLICE
    assert cfg.extended_l2 and cfg.cluster_size == 64 << 10
    params = lifeplan.parameters(s, "raid1_10k", coverage=c, used=(used,))
    back = lifeplan.LifecycleParameters.from_json(params.to_json(), "test")
    assert back.qcow2 == "esx35-redo-log" and back.operating_points == (used,)
    assert op.used_in(params.to_json()) == ("esx35_redolog",)
    p = profiles.get("quick")
    assert calplan.reads_double_config(p).name == "on-disk-metadata"         # the preset: an eighth
    cc, cused = ss.coverage("inferred", calplan.STAND_IN, p.disk_size, calplan.PRESET_COVERAGE)
    assert calplan.reads_double_config(p, cc).l2_cache_size < calplan.reads_double_config(p, Fraction(1)).l2_cache_size
    cal = calplan.parameters(p, calplan.build_plan(p), "raid1_10k", cc, (cused,))
    assert cal.reads_double_config == "esx35-redo-log" and op.used_in(cal.to_json()) == ("esx35_redolog",)
