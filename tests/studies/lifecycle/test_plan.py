"""The lifecycle plan: scales, the two-worker fio job file, and the scaled VMware bounds."""
import pytest

from snaptax import profiles
from snaptax.errors import ConfigError
from snaptax.fio import FioTarget
from snaptax.studies.lifecycle import plan as planmod
from tests.parameters import assert_missing_is_named, assert_round_trip, committed_parameters

MiB = 1 << 20


def test_every_profile_has_a_scale_and_a_description():
    for name in profiles.PROFILES:
        p = profiles.get(name)
        s = planmod.scale(p)
        assert s.disk_bytes >= 2 * s.file_bytes
        text = planmod.describe(p)
        assert "reader, writer" in text and "70 % random" in text


def test_two_workers_in_one_job_file():
    s = planmod.scale(profiles.get("quick"))
    w = planmod.workload(s, "light", 6, "iometer-light")
    text = w.job_file(FioTarget("nbd", uri="nbd+unix:///vd?socket=/x"), "/tmp/fio")
    assert text.count("[reader]") == 1 and text.count("[writer]") == 1
    assert "per_job_logs=1" in text and "write_iops_log=/tmp/fio" in text
    assert "thinktime=25000" in text and "percentage_random=70" in text and "iodepth=1" in text
    assert f"offset={s.file_bytes // MiB}M" in text       # the writer's file follows the reader's
    sat = planmod.workload(s, "saturated", 6, "x").job_file(FioTarget("nbd", uri="u"), "p")
    assert "thinktime=0" in sat
    g = planmod.grid_workload(s, 40).job_file(FioTarget("nbd", uri="u"), "p")
    assert "rate_iops=40" in g and "thinktime=25000" in g    # the reader stays light


def test_scaled_vmware_bounds():
    s = planmod.scale(profiles.get("quick"))
    assert s.device_scale == pytest.approx(1 / 32)           # 32 MiB files for the seed's 1 GiB
    assert s.helper_threshold_bytes == 512 * 1024            # 16 MiB / 32
    assert s.max_consolidate_s == pytest.approx(1 + 12 / 32)
    assert planmod.scale(profiles.get("smoke")).helper_threshold_bytes >= 64 * 1024


def test_bad_scale_and_load_are_refused():
    with pytest.raises(ConfigError, match="disk_bytes"):
        planmod.LifecycleScale(32 * MiB, 32 * MiB, 6, 20, 6, (10,), 10)
    with pytest.raises(ConfigError, match="light_steady_s"):
        planmod.LifecycleScale(8 * MiB, 32 * MiB, 6, 20, 4, (10,), 10)
    quick = planmod.scale(profiles.get("quick"))
    assert quick.steady_for("light") == quick.light_steady_s and quick.steady_for("saturated") == quick.steady_s
    with pytest.raises(ConfigError, match="load"):
        planmod.workload(planmod.scale(profiles.get("smoke")), "heavy", 2, "x")


def test_parameters_read_back_from_the_manifest_and_a_missing_key_is_named():
    params = planmod.parameters(planmod.scale(profiles.get("quick")), "raid1_10k", 16 << 30)
    assert_round_trip(params)
    assert_missing_is_named(params, "device_capacity")


@pytest.mark.committed
def test_every_committed_run_s_parameters_load(monkeypatch):
    for params in committed_parameters(monkeypatch, "lifecycle", planmod.LifecycleParameters).values():
        assert params.device_capacity > params.scale.disk_bytes
