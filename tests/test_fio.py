import json

import pytest

from snaptax import fio
from snaptax.errors import ConfigError, MeasurementError

SEED001_RANDRW = ("-ioengine=libaio -iodepth=32 -rw=randrw -bs=4096 -direct=1 -numjobs=4 -group_reporting=1 "
                  "-size=50G -time_based -runtime=300 -randrepeat=1")


def _cli_options(text: str) -> dict[str, str]:
    out = {}
    for tok in text.split():
        key, _, value = tok.lstrip("-").partition("=")
        out[key] = value or "1"
    return out


def test_seed001_job_expresses_the_published_command_line_exactly():
    job = fio.seed001_job("randrw", size=fio.parse_size("50G"), runtime_s=300)
    target = fio.FioTarget("libaio", filename="/dev/null")
    ours = dict(job.options()) | target.options()
    ours.pop("filename")
    assert ours == _cli_options(SEED001_RANDRW)


def test_job_file_has_target_in_global_and_workload_in_job_section():
    job = fio.seed001_job("readwrite", size=1 << 30, runtime_s=5)
    text = job.job_file(fio.FioTarget("nbd", uri="nbd+unix:///vd?socket=/x.sock"), log_prefix="fio")
    glob, _, section = text.partition("[readwrite]")
    assert "ioengine=nbd" in glob and "uri=nbd+unix:///vd?socket=/x.sock" in glob
    assert "write_iops_log=fio" in glob and "log_avg_msec=1000" in glob
    assert "rw=readwrite" in section and "size=1G" in section and "numjobs=4" in section


def test_verify_jobs_never_save_verify_state():
    """fio would write <engine>-<job>-<n>-verify.state into its working directory (once, into the checkout)."""
    plain = dict(fio.FioJob("w", "write", time_based=False, runtime_s=None).options())
    assert "verify_state_save" not in plain
    verify = dict(fio.FioJob("v", "randwrite", time_based=False, runtime_s=None, verify="crc32c").options())
    assert verify["verify_state_save"] == "0"
    only = fio.FioJob("r", "read", time_based=False, runtime_s=None, extra=(("verify_only", "1"),))
    assert dict(only.options())["verify_state_save"] == "0"


@pytest.mark.parametrize("text,expected", [("4K", 4096), ("50G", 50 << 30), ("512KiB", 512 << 10), (7, 7)])
def test_parse_size(text, expected):
    assert fio.parse_size(text) == expected


def test_parse_size_names_the_field():
    with pytest.raises(ConfigError, match="capacity"):
        fio.parse_size("lots", source="rig.yaml", field_name="capacity")


def test_format_size_roundtrip():
    for n in (4096, 50 << 30, 3 << 20, 12345):
        assert fio.parse_size(fio.format_size(n)) == n


def test_bad_jobs_are_refused_with_the_field_named():
    with pytest.raises(ConfigError, match="rw"):
        fio.FioJob("x", "sideways", runtime_s=1)
    with pytest.raises(ConfigError, match="runtime_s"):
        fio.FioJob("x", "read")
    with pytest.raises(ConfigError, match="log_avg_msec"):
        fio.FioJob("x", "read", runtime_s=1, log_avg_msec=100)
    with pytest.raises(ConfigError, match="randseed"):
        fio.FioJob("x", "randread", runtime_s=1, randseed=-1)


def test_randseed_is_written_only_when_set():
    assert "randseed" not in dict(fio.FioJob("x", "randread", runtime_s=1).options())
    assert dict(fio.FioJob("x", "randread", runtime_s=1, randseed=7).options())["randseed"] == "7"


def _fio_result(read_iops=100.0, write_iops=50.0):
    def side(iops, ios):
        return {"iops": iops, "bw": iops * 4, "total_ios": ios, "runtime": 1000,
                "clat_ns": {"mean": 2000.0, "percentile": {"50.000000": 1500, "99.000000": 9000}},
                "lat_ns": {"mean": 2500.0}}
    return {"jobs": [{"jobname": "randrw", "error": 0, "read": side(read_iops, 100), "write": side(write_iops, 50)}]}


def test_tidy_rows_units_and_directions():
    rows = fio.tidy_rows(_fio_result())
    assert [r["direction"] for r in rows] == ["read", "write"]
    assert rows[0]["clat_mean_us"] == pytest.approx(2.0)
    assert rows[0]["clat_p99_us"] == pytest.approx(9.0)
    assert fio.total_iops(_fio_result()) == pytest.approx(150.0)


def test_load_json_skips_notes_before_the_object():
    text = "note: both iodepth >= 1 and synchronous I/O engine are selected\n" + json.dumps(_fio_result())
    assert fio.load_json(text)["jobs"][0]["jobname"] == "randrw"
    with pytest.raises(MeasurementError):
        fio.load_json("fio: failed")
