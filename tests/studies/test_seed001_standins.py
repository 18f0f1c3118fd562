"""Seed 001's stand-ins at the rig's inferred operating points (snaptax.studies.seed001_standins)."""
from __future__ import annotations

from fractions import Fraction

import pytest

from snaptax import operatingpoints as op
from snaptax.engines.qcow2 import L2_SLICE, PRESET_COVERAGES, metadata_configs, nearest_coverage
from snaptax.errors import ConfigError
from snaptax.studies import seed001_standins as s1

GiB = 1 << 30


def test_a_coverage_is_realised_as_the_nearest_whole_number_of_slices():
    # 1 GiB, 64 KiB clusters, extended L2 (16-byte entries): 256 KiB of tables, 64 slices of 4 KiB
    assert nearest_coverage(0.915, GiB) == Fraction(59, 64)
    assert nearest_coverage(0.9896, GiB) == Fraction(63, 64)
    assert nearest_coverage(0.999, GiB) == 1 and nearest_coverage(0.001, GiB) == Fraction(2, 64)  # QEMU's minimum
    assert nearest_coverage(0.9896, 256 << 20) == 1                        # 16 slices: the nearest is all of them
    with pytest.raises(ConfigError, match="coverage"):
        nearest_coverage(1.2, GiB)
    on_disk, in_memory = metadata_configs(GiB, (Fraction(59, 64), Fraction(63, 64)))
    assert on_disk.l2_cache_size == 59 * L2_SLICE and in_memory.l2_cache_size == 63 * L2_SLICE


def test_the_stand_ins_measure_at_the_rigs_inferred_points_and_say_where_they_come_from(monkeypatch):
    points = {"vmfs_sesparse": op.OperatingPoint("vmfs_sesparse", 0.915, 0.856, 0.958, "metadata_cache/r", "c")}
    monkeypatch.setattr(op, "read", lambda rig: points if rig == "inferred" else {})
    assert s1.coverages("bare", GiB) == (PRESET_COVERAGES, ())
    coverages, used = s1.coverages("inferred", GiB)
    assert coverages == (Fraction(59, 64), PRESET_COVERAGES[1])            # vSAN's not inferred: its preset
    assert [u.stand_in for u in used] == ["vmfs_sesparse"] and used[0].realised == 59 / 64
    assert "inferred 0.915" in s1.describe("inferred") and "preset 1 (not inferred" in s1.describe("inferred")
    values = {v.key: v for v in s1.operating_point_values("s", used)}
    assert values["s.coverage.on-disk-metadata"].value == 59 / 64
    assert values["s.coverage_source.on-disk-metadata"].text == "inferred from metadata_cache/r"
    assert values["s.coverage_inferred.on-disk-metadata"].low == 0.856
    assert values["s.coverage.in-memory-metadata"].value == 1.0
    assert values["s.coverage_source.in-memory-metadata"].text == "preset"
    assert "s.coverage_inferred.in-memory-metadata" not in values
    # a run before operating points (None recorded) measured at the presets
    assert {v.key: v.value for v in s1.operating_point_values("s", None)}["s.coverage.on-disk-metadata"] == 0.125
