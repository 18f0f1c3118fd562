"""Run records are published whole or not at all."""
import json

import pytest

from snaptax import fio, rig as rigmod
from snaptax.plan import Measure
from snaptax.record import RunSession, published_runs

JOB = fio.FioJob("randrw", "randrw", runtime_s=1)


def fake_run(directory, iops=100.0):
    directory.mkdir(parents=True, exist_ok=True)
    result = {"jobs": [{"jobname": "randrw", "error": 0,
                        "read": {"iops": iops, "bw": 1, "total_ios": 10, "runtime": 1000, "clat_ns": {}, "lat_ns": {}},
                        "write": {"iops": iops, "bw": 1, "total_ios": 10, "runtime": 1000, "clat_ns": {}, "lat_ns": {}}}]}
    (directory / "fio.json").write_text(json.dumps(result))
    return fio.FioRun(directory, result, 1.0)


def session(work_dir):
    return RunSession(rigmod.load("local"), "unit", "smoke", {"p": 1})


def test_published_run_has_manifest_results_and_measurements(data_dir, work_dir):
    with session(work_dir) as s:
        with s.in_variant("v1", {"engine": "x"}):
            step = Measure(JOB, "create")
            d = s.measurement_dir(0, step)
            s.record_measurement(0, step, chain_length=0, fio_run=fake_run(d),
                                 counters_before={"disk_reads": 5}, counters_after={"disk_reads": 25})
    run = s.published
    assert run is not None and run.parent == data_dir / "local" / "unit"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["variants"] == {"v1": {"engine": "x"}}
    assert manifest["provenance"]["tools"]["python"]
    assert manifest["devices"][0]["name"] == "ssd"
    m = json.loads((run / "measurements/v1/000-create-randrw-r0/measurement.json").read_text())
    assert m["counters_delta"] == {"disk_reads": 20}
    assert "host_disk_reads" in (run / "results.csv").read_text().splitlines()[0]
    assert published_runs("local", "unit") == [run]
    assert not s.staging.exists()


def test_failed_run_leaves_nothing(data_dir, work_dir):
    with pytest.raises(RuntimeError):
        with session(work_dir) as s:
            step = Measure(JOB, "create")
            s.record_measurement(0, step, chain_length=0, fio_run=fake_run(s.measurement_dir(0, step)),
                                 counters_before={}, counters_after={})
            raise RuntimeError("disk on fire")
    assert not (data_dir / "local" / "unit").exists() or not any((data_dir / "local" / "unit").iterdir())
    assert not s.staging.exists()
