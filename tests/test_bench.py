"""bench.main without measuring: a fake group, a private bench/ directory."""
import json

import pytest

from snaptax import bench, paths
from snaptax.errors import ConfigError


@pytest.fixture
def fake(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "BENCH_DIR", tmp_path)
    monkeypatch.setattr(paths, "BENCH_LATEST", tmp_path / "latest.json")   # never the committed bench/latest.json
    monkeypatch.setattr(bench, "groups", lambda: {"fake": lambda: {"fake_ratio": 0.5, "fake_rounds": 3}})
    return tmp_path / "latest.json"


def test_latest_json_is_flat_and_says_where_and_when(fake):
    bench.main()
    out = json.loads(fake.read_text())
    assert out["fake_ratio"] == 0.5 and out["fake_rounds"] == 3
    assert all(not isinstance(v, (dict, list)) for v in out.values())
    assert out["meta_date_utc"].endswith("Z") and out["meta_groups"] == "fake"
    assert out["meta_kernel"] and out["meta_cpus"] >= 1
    assert {"meta_commit", "meta_commit_dirty", "meta_cpu_model"} <= set(out)
    assert out["meta_fake_date_utc"][:10] == out["meta_date_utc"][:10] and out["meta_fake_commit"] == out["meta_commit"]


def test_a_group_not_run_keeps_its_figures_and_its_own_provenance(fake, monkeypatch):
    fake.write_text(json.dumps({"old_figure": 1.0, "meta_old_date_utc": "2026-01-02T03:04:05Z",
                                "meta_old_commit": "abc", "meta_old_cpu_model": "other CPU"}))
    bench.main(["fake"])
    out = json.loads(fake.read_text())
    assert out["old_figure"] == 1.0 and out["meta_old_cpu_model"] == "other CPU"
    assert out["meta_groups"] == "fake" and out["meta_fake_date_utc"] != "2026-01-02T03:04:05Z"


def test_unknown_group_is_a_config_error_before_anything_runs(fake):
    with pytest.raises(ConfigError, match="unknown benchmark group.*'nosuch'.*have: fake"):
        bench.main(["nosuch"])
    assert not fake.exists()


def test_harness_job_keeps_32_outstanding_over_its_connections():
    one, two = bench.harness_job(connections=1), bench.harness_job(connections=2)
    assert (one.numjobs, one.iodepth) == (1, 32) and (two.numjobs, two.iodepth) == (2, 16)


def test_fio_cpu_seconds_from_per_cent_and_runtime():
    result = {"jobs": [{"usr_cpu": 10.0, "sys_cpu": 30.0, "job_runtime": 5000}]}
    assert bench._fio_cpu_seconds(result) == pytest.approx(2.0)


def test_machine_busy_seconds_grows_with_work():
    before = bench._machine_busy_seconds()
    sum(i * i for i in range(2_000_000))
    assert bench._machine_busy_seconds() > before
