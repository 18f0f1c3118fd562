"""fio's own fiologparser on a real fio 3.33 log (five columns; the script unpacks four)."""
import shutil
import subprocess

import pytest

from snaptax import fiolog

pytestmark = pytest.mark.skipif(not (shutil.which("fio") and fiolog.SCRIPT_GZ.exists()),
                                reason="needs fio and Debian's fiologparser.py.gz")


def test_fiologparser_sums_a_real_fio_iops_log(tmp_path):
    job = tmp_path / "job.fio"
    job.write_text("[global]\nioengine=null\nsize=1G\ntime_based=1\nruntime=3\nrw=randread\nbs=4k\n"
                   f"rate_iops=200\nwrite_iops_log={tmp_path}/fio\nlog_avg_msec=1000\nper_job_logs=1\n[r]\n")
    subprocess.run(["fio", "--output-format=json", f"--output={tmp_path}/fio.json", str(job)], check=True,
                   capture_output=True)
    log = tmp_path / "fio_iops.1.log"
    assert len(log.read_text().splitlines()[0].split(",")) == 5      # fio 3.33 writes five columns
    rows = fiolog.per_second(log)
    assert len(rows) >= 2
    assert [round(t) for t, _ in rows[:2]] == [1, 2]
    for _, v in rows[:2]:
        assert v == pytest.approx(200, rel=0.1)
    assert (tmp_path / "fio_iops.1.log.parsed").read_text().strip()
    # the parser's output is kept beside the log; its script and four-column input are not
    assert not list(tmp_path.glob("*.4col")) and not (tmp_path / "fiologparser.py").exists()


def test_split_directions_gives_four_column_files_per_direction(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("1000, 12, 0, 4096, 0\n\n1000, 3, 1, 4096, 0\n2000, 10, 0, 4096, 0\n")
    out = fiolog.split_directions(log, tmp_path)
    assert [p.read_text() for p in out] == ["1000, 12, 0, 4096\n2000, 10, 0, 4096\n", "1000, 3, 1, 4096\n"]


def test_a_mixed_job_counts_reads_and_writes(tmp_path):
    # fio logs a randrw job's two directions with the same timestamps; fiologparser alone would count one of them
    job = tmp_path / "job.fio"
    job.write_text("[global]\nioengine=null\nsize=1G\ntime_based=1\nruntime=3\nrw=randrw\nrwmixread=75\nbs=4k\n"
                   f"rate_iops=150,50\nwrite_iops_log={tmp_path}/fio\nlog_avg_msec=1000\n[rw]\n")
    subprocess.run(["fio", "--output-format=json", f"--output={tmp_path}/fio.json", str(job)], check=True,
                   capture_output=True)
    rows = fiolog.per_second(next(tmp_path.glob("fio_iops*.log")))
    for _, v in rows[:2]:
        assert v == pytest.approx(200, rel=0.1)


def test_parse_sums():
    assert fiolog.parse_sums("1000, 12.000\n2000, 3.500\n") == [(1.0, 12.0), (2.0, 3.5)]
