"""fio's own fiologparser on a real fio 3.33 log (five columns; the script unpacks four)."""
import shutil
import subprocess

import pytest

from snaptax import fiolog
from tests.synthetic import fio_log

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


def test_every_job_counts_in_every_second(tmp_path):
    """fiologparser reads a log as one series: in fio's log of 4 jobs, jobs 2-4 lose their first second (their first
    sample 'starts' at the job before's last); with the jobs told apart, each second holds all four."""
    log = tmp_path / fiolog.IOPS_LOG
    log.write_text(fio_log([8000, 8000, 8000]))
    assert fiolog.per_second(log)[0][1] == pytest.approx(2000, rel=0.01)     # one job of four in the first second
    assert fiolog.run_seconds(log) == pytest.approx([8000, 8000, 8000], rel=0.01)
    assert {p.name for p in tmp_path.iterdir()} == {fiolog.IOPS_LOG, fiolog.IOPS_LOG + ".parsed"}   # only fiolog's own
    # a job whose log stops before its third sample leaves the run two whole seconds (the third is partial)
    log.write_text(fio_log([8000, 8000, 8000], short_jobs=1))
    assert fiolog.run_seconds(log) == pytest.approx([8000, 8000], rel=0.01)
    assert len(fiolog.run_seconds(tmp_path / "absent.log")) == 0


def test_label_jobs_starts_a_job_where_a_direction_s_time_stops_increasing(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("1000, 5, 0, 0, 0\n1000, 6, 1, 0, 0\n2001, 7, 0, 0, 0\n\n999, 8, 0, 0, 0\n999, 9, 1, 0, 0\n"
                   "999, 1, 0, 0, 0\n")
    (tmp_path / "out").mkdir()
    assert fiolog.label_jobs(log, tmp_path / "out").read_text().splitlines() == [
        "1000, 5, j1d0, 0, 0", "1000, 6, j1d1, 0, 0", "2001, 7, j1d0, 0, 0", "999, 8, j2d0, 0, 0",
        "999, 9, j2d1, 0, 0", "999, 1, j3d0, 0, 0"]


def test_full_seconds_leave_out_a_partial_last_window():
    assert fiolog.full_seconds([(1.0, 10.0), (2.0, 20.0), (2.999, 30.0), (3.001, 40.0)]) == [10.0, 20.0, 30.0]
    assert fiolog.full_seconds([(1.0, 10.0), (2.0, 20.0), (2.005, 30.0)]) == [10.0, 20.0]
    assert fiolog.full_seconds([]) == []
