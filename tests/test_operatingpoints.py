"""Inferred operating points (snaptax.operatingpoints): written and read back, refused outside their range, and what
a run records of the ones it measured at."""
from __future__ import annotations

import pytest

from snaptax import inferpoints, judged, operatingpoints as op
from snaptax.errors import ConfigError
from snaptax.values import DerivedValues, Value


@pytest.fixture
def rig_dir(tmp_path, monkeypatch):
    where = lambda rig: tmp_path / "operating-points" / f"{rig}.yaml"   # noqa: E731
    monkeypatch.setattr(op, "path", where)
    monkeypatch.setattr(inferpoints, "path", where)
    return tmp_path


def point(sid="vmfs_sesparse", value=0.915, low=0.856, high=0.958):
    return op.OperatingPoint(sid, value, low, high, "metadata_cache/20990101T000000Z-quick",
                             "chain_length.loss.on-disk-metadata.randrw")


def test_written_points_read_back_and_a_missing_one_names_how_to_infer_it(rig_dir):
    assert op.read("r") == {}
    inferpoints.write("r", {"vmfs_sesparse": point()})
    assert op.read("r") == {"vmfs_sesparse": point()}
    assert (rig_dir / "operating-points" / "r.yaml").read_text().startswith("# inferred operating points")
    with pytest.raises(ConfigError, match="snaptax infer --rig r"):
        op.get("r", "vsan_sparse")
    (rig_dir / "operating-points" / "r.yaml").write_text("vmfs_sesparse: {value: 0.9}\n")
    with pytest.raises(ConfigError, match="vmfs_sesparse.low"):
        op.read("r")


def test_a_coverage_outside_zero_to_one_is_refused():
    assert op.refused(point()) == ""
    assert op.refused(point(value=0.99, high=1.0)) == ""
    assert "outside [0, 1]" in op.refused(point(value=0.99, high=1.07))
    assert "outside [0, 1]" in op.refused(point(value=-0.1, low=-0.2))


def test_a_run_records_the_points_it_measured_at_and_its_values_say_so():
    used = op.UsedPoint.of(point(), 58 / 64)
    assert used.inferred == 0.915 and used.realised == 58 / 64
    params = {"device": "ssd", "operating_points": [{"stand_in": "vsan_sparse", "realised": 63 / 64},
                                                    {"stand_in": "vmfs_sesparse", "realised": 59 / 64}]}
    assert op.settings_in(params) == (("vmfs_sesparse", 59 / 64), ("vsan_sparse", 63 / 64))
    assert op.used_in(params) == ("vmfs_sesparse", "vsan_sparse")
    assert op.shown(op.settings_in(params)) == "vmfs_sesparse=0.921875,vsan_sparse=0.984375"
    assert op.used_in({"device": "ssd"}) == () and op.used_in({"operating_points": []}) == ()
    for found in [{}, params]:
        d = DerivedValues("chain_length", "x", "local", "quick")
        d.add([Value(f"chain_length.run.{op.RUN_VALUE}", text=op.shown(op.settings_in(found)))])
        assert judged.inferred_in(d) == op.used_in(found)
    assert judged.inferred_in(DerivedValues("chain_length", "x", "local", "quick")) == ()   # before the run value


@pytest.mark.committed
def test_the_committed_points_are_what_the_committed_sweeps_infer(monkeypatch):
    """rigs/operating-points/ is written by `snaptax infer` only: each committed point is what the committed run it
    names gives now (to printed precision: nothing may rest on a float's last bits), a quick or full run of the study
    that infers its stand-in (tiering's sweep is measured at full only)."""
    from snaptax import standins
    from snaptax.host import rig as rigmod

    monkeypatch.delenv("SNAPTAX_DATA_DIR", raising=False)      # the checkout's data/, also under `make unit`

    for rig in rigmod.names():
        for sid, p in op.read(rig).items():
            s = standins.get(sid)
            run = inferpoints.recorded_run(rig, p)
            assert run.parent.name == s.value_key.split(".")[0] and run.name.endswith(("-quick", "-full")), sid
            q = inferpoints.point_of(s, run)
            assert q is not None, f"{rig}: {sid}'s run {p.run} gives no point"
            assert p.run == q.run and p.calibrating == q.calibrating
            assert [round(x, 6) for x in (p.value, p.low, p.high)] == [round(x, 6) for x in (q.value, q.low, q.high)]
            assert op.refused(p) == ""


def test_inferring_one_stand_in_keeps_the_others_where_the_file_has_them(rig_dir, monkeypatch):
    from pathlib import Path

    inferpoints.write("r", {"vmfs_sesparse": point()})
    runs = {study: [Path(f"/runs/{study}/20991231T000000Z-quick")] for study in ("metadata_cache", "calibration")}
    monkeypatch.setattr(inferpoints, "readable_runs", lambda rig, study, profile: runs.get(study, []))
    moved = {"vmfs_sesparse": point(value=0.97, low=0.91, high=1.0), "esx35_redolog": point("esx35_redolog", 0.5)}
    monkeypatch.setattr(inferpoints, "point_of", lambda s, run: moved.get(s.id))
    every = inferpoints.infer("r", "quick")
    assert every["vmfs_sesparse"].value == 0.97 and "esx35_redolog" in every
    one = inferpoints.infer("r", "quick", ["esx35_redolog"])
    assert one["vmfs_sesparse"] == point() and one["esx35_redolog"].value == 0.5
    assert set(one) == {"vmfs_sesparse", "esx35_redolog"}        # vsan: in neither the file nor the selection
