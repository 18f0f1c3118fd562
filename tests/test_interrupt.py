"""Ctrl-C in the middle of a study: every process and loop device goes, and no partial run reaches data/."""
import os
import signal
import subprocess
import sys
import time

import pytest

from snaptax import paths
from tests.conftest import requires_qsd, requires_root
from tests.processes import processes_in

pytestmark = [pytest.mark.integration, requires_qsd, requires_root]


def ours(work_dir):
    procs = subprocess.run(["pgrep", "-af", str(work_dir)], capture_output=True, text=True).stdout
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    named = [line for line in procs.splitlines() + loops.splitlines() if str(work_dir) in line and "pytest" not in line]
    return named + [line for line in processes_in(work_dir) if "pytest" not in line]


def _as_from_a_terminal() -> None:
    """A command typed at a terminal gets Ctrl-C; one started by a background job of a non-interactive shell (how
    a CI runner may start `make test`) inherits SIGINT ignored, and Python then keeps ignoring it. The test
    simulates the terminal, so it gives the child the default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_during_fio_cleans_up(sig, data_dir, work_dir):
    env = dict(os.environ, SNAPTAX_DATA_DIR=str(data_dir), SNAPTAX_WORK_DIR=str(work_dir))
    proc = subprocess.Popen([sys.executable, "-m", "snaptax", "run", "chain_length", "--profile", "smoke"],
                            cwd=paths.REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        running = subprocess.run(["pgrep", "-f", "fio --output-format=json"], capture_output=True, text=True)
        measurements = list(work_dir.glob("local/staging/chain_length/*/measurements/*/*/measurement.json"))
        if running.stdout.strip() and len(measurements) >= 2:
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.2)
    else:
        pytest.fail("the study never reached its third fio run")
    os.kill(proc.pid, sig)  # the terminal's Ctrl-C reaches our process group; children are in their own sessions
    _, err = proc.communicate(timeout=120)
    assert proc.returncode in (130, 128 + sig), err.decode()
    time.sleep(0.5)
    assert ours(work_dir) == []
    published = list((data_dir / "local" / "chain_length").glob("*")) if data_dir.exists() else []
    assert published == []
    assert not list(work_dir.glob("local/staging/chain_length/*"))
