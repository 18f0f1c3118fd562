"""snaptax.bench.harness without measuring: the job and the CPU accounting."""
import pytest

from snaptax.bench import harness


def test_harness_job_keeps_32_outstanding_over_its_connections():
    one, two = harness.harness_job(connections=1), harness.harness_job(connections=2)
    assert (one.numjobs, one.iodepth) == (1, 32) and (two.numjobs, two.iodepth) == (2, 16)


def test_fio_cpu_seconds_from_per_cent_and_runtime():
    result = {"jobs": [{"usr_cpu": 10.0, "sys_cpu": 30.0, "job_runtime": 5000}]}
    assert harness._fio_cpu_seconds(result) == pytest.approx(2.0)


def test_machine_busy_seconds_grows_with_work():
    before = harness._machine_busy_seconds()
    sum(i * i for i in range(2_000_000))
    assert harness._machine_busy_seconds() > before
