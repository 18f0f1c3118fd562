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


def test_the_groups_are_those_bench_latest_json_holds():
    """The bench package's groups, by the names bench/latest.json's figures and meta_<group>_* keys carry."""
    assert list(bench.groups()) == ["harness", "spindle", "guest", "cofw", "crosscheck", "models"]
    recorded = json.loads(paths.BENCH_LATEST.read_text())
    measured = {k[len("meta_"):-len("_date_utc")] for k in recorded if k.endswith("_date_utc") and k != "meta_date_utc"}
    assert measured and measured <= set(bench.groups())
