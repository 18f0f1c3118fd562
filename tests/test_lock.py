import subprocess
import sys

from snaptax import lock, paths


def test_reentrant_within_a_process():
    with lock.measurement_lock():
        with lock.measurement_lock():
            pass


def test_a_child_of_the_holder_does_not_deadlock():
    code = "from snaptax.lock import measurement_lock\nwith measurement_lock(): print('inside')"
    out = subprocess.run(["flock", str(paths.MEASURE_LOCK), sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=600)
    assert out.stdout.strip() == "inside", out.stderr


