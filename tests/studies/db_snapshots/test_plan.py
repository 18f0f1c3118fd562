"""The database-snapshot plan: every device measures k = 0, 1, 2 in rotating order, snapshots taken before their
run and dropped after it; the workload writes each data file's share once, as 64 KiB extents."""
import pytest

from snaptax import profiles
from snaptax.errors import ConfigError
from snaptax.fio import FioTarget, format_size
from snaptax.plan import split_replicate
from snaptax.studies.db_snapshots import plan as pl
from tests.parameters import assert_missing_is_named, assert_round_trip, committed_parameters


@pytest.mark.parametrize("profile", ["smoke", "quick", "full"])
def test_every_device_runs_every_snapshot_count_repeats_times(profile):
    prof = profiles.get(profile)
    s = pl.scale(prof)
    study = pl.build_plan(prof)
    devices = [split_replicate(v.variant)[0] for v in study.variants]
    assert devices == list(pl.SNAPSHOT_DEVICES) * s.replicates          # replicate-major, each a fresh engine
    assert len({v.variant for v in study.variants}) == len(study.variants)
    for v, device in zip(study.variants, devices, strict=True):
        runs = [(m.repeat, k) for _, m, k in v.plan.measurements() if m.phase == pl.PHASE]
        n = s.repeats_on(device)
        assert sorted(runs) == sorted((r, k) for r in range(n) for k in pl.SNAPSHOT_COUNTS)
        assert v.plan.max_chain_length == 2
        # every repetition ends with no snapshot left
        assert sum(1 for st in v.plan.steps if type(st).__name__ == "TakeSnapshot") == \
            sum(1 for st in v.plan.steps if type(st).__name__ == "DeleteSnapshot")


def test_the_order_rotates_so_each_count_runs_first_equally_often():
    firsts = [pl.order(r)[0] for r in range(6)]
    assert sorted(firsts) == [0, 0, 1, 1, 2, 2]
    assert all(sorted(pl.order(r)) == [0, 1, 2] for r in range(6))


def test_the_select_into_writes_each_file_once_in_extents():
    s = pl.scale(profiles.get("quick"))
    job = pl.select_into(s)
    text = job.job_file(FioTarget("nbd", uri="nbd+unix:///live?socket=/x"))
    assert "numjobs=8" in text and "bs=65536" in text and "rw=write" in text
    assert "time_based" not in text
    assert f"offset_increment={format_size(s.file_bytes)}" in text
    assert job.size * pl.DATA_FILES == s.table_bytes


def test_a_table_that_is_not_whole_extents_per_file_is_refused():
    with pytest.raises(ConfigError, match="table_bytes"):
        pl.DbSnapshotScale(pl.EXTENT * 9, repeats=2, ssd_repeats=2)
    with pytest.raises(ConfigError, match="repeats"):
        pl.DbSnapshotScale(pl.EXTENT * 8, repeats=0, ssd_repeats=2)
    with pytest.raises(ConfigError, match="ssd_repeats"):
        pl.DbSnapshotScale(pl.EXTENT * 8, repeats=2, ssd_repeats=0)


def test_the_table_is_the_seed_s_rows_at_salesorderheader_s_density_in_whole_extents():
    from snaptax.host import rig as rigmod
    cap = rigmod.load("local").device(pl.SOURCE_DEVICE).throttle
    assert cap is not None and cap.write_mb_s == pl.SOURCE_WRITE_MB_S     # the rig and the plan say one rate
    unit = pl.DATA_FILES * pl.EXTENT
    assert pl.TABLE_BYTES % unit == 0
    rows_bytes = pl.SEED_ROWS * pl.DENSITY_PAGES / pl.DENSITY_ROWS * pl.PAGE
    assert rows_bytes <= pl.TABLE_BYTES < rows_bytes + unit                # the rows, rounded up to one group
    assert pl.seed_table_bytes(1) == unit                                  # never an empty table
    assert all(pl.scale(profiles.get(p)).table_bytes == pl.TABLE_BYTES for p in ("quick", "full"))


def test_the_statement_s_work_is_the_seed_s_baseline_scaled_by_the_snapshot_device_s_cap():
    pages = pl.TABLE_BYTES // pl.PAGE
    assert pages * pl.STATEMENT_S_PER_PAGE == pytest.approx(pl.SEED_BASELINE_S)
    assert pl.time_scale(None) == 1.0 and pl.time_scale(pl.SOURCE_WRITE_MB_S) == 4.0   # a quarter of a module
    local = pl.local_statement()
    assert pages * local["raid5_15k_6"] / 1e9 == pytest.approx(pl.SEED_BASELINE_S, rel=1e-4)
    assert local["ssd_snapshots"] == pytest.approx(4 * local["raid5_15k_6"], rel=1e-4)
    assert pl.engine_config(local["ssd_snapshots"]).core().statement_ns == local["ssd_snapshots"]


def test_describe_is_deterministic_and_names_both_devices():
    text = pl.describe(profiles.get("smoke"))
    assert text == pl.describe(profiles.get("smoke"))
    assert all(d in text for d in pl.SNAPSHOT_DEVICES)


def test_parameters_read_back_from_the_manifest_and_a_missing_key_is_named():
    params = pl.parameters(pl.scale(profiles.get("quick")), pl.SOURCE_DEVICES, pl.local_statement())
    assert_round_trip(params)
    assert_missing_is_named(params, "scale.ssd_repeats")     # inside the recorded DbSnapshotScale


@pytest.mark.committed
def test_every_committed_run_s_parameters_load(monkeypatch):
    for params in committed_parameters(monkeypatch, "db_snapshots", pl.DbSnapshotParameters).values():
        assert params.snapshot_devices == pl.SNAPSHOT_DEVICES
