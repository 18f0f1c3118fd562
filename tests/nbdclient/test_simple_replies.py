"""The simple-replies shim: built from its source, preloaded only for nbd targets, and effective in a real libnbd
handle (whether QEMU then looks an L2 entry up once per read is tests/engines/test_qcow2.py's)."""
import os
import shutil
import subprocess

import pytest

from snaptax import fio
from snaptax.nbdclient import build_shim

has_cc_and_libnbd = shutil.which("gcc") is not None and os.path.exists("/usr/include/libnbd.h")
# Debian's libnbd bindings (python3-libnbd) live in the system Python, not in the project's .venv
SYSTEM_PYTHON = "/usr/bin/python3"
has_bindings = os.path.exists(SYSTEM_PYTHON) and \
    subprocess.run([SYSTEM_PYTHON, "-c", "import nbd"], capture_output=True).returncode == 0


def test_only_an_nbd_target_with_simple_replies_preloads_anything(tmp_path, monkeypatch):
    monkeypatch.setattr("snaptax.nbdclient.build_shim", lambda: tmp_path / "shim.so")
    shim = {"LD_PRELOAD": str(tmp_path / "shim.so")}
    assert fio.FioTarget("nbd", uri="nbd+unix:///x?socket=/s").environment() == shim
    assert fio.FioTarget("nbd", uri="nbd+unix:///x?socket=/s", structured_replies=True).environment() == {}
    assert fio.FioTarget("libaio", filename="/dev/null").environment() == {}


def test_the_job_file_says_which_replies_the_nbd_client_asked_for():
    job = fio.FioJob("j", "randread", runtime_s=1, log_avg_msec=None)
    simple = job.job_file(fio.FioTarget("nbd", uri="nbd+unix:///x?socket=/s"))
    structured = job.job_file(fio.FioTarget("nbd", uri="nbd+unix:///x?socket=/s", structured_replies=True))
    assert "# nbd replies: simple" in simple and "# nbd replies: structured" in structured
    assert "# nbd replies" not in job.job_file(fio.FioTarget("libaio", filename="/dev/null"))


@pytest.mark.skipif(not has_cc_and_libnbd, reason="needs gcc and libnbd-dev")
@pytest.mark.skipif(not has_bindings, reason="needs python3-libnbd")
def test_a_handle_created_under_the_shim_asks_for_simple_replies(tmp_path):
    shim = build_shim(output=tmp_path / "shim.so")
    probe = "import nbd; print(nbd.NBD().get_request_structured_replies())"
    plain = subprocess.run([SYSTEM_PYTHON, "-c", probe], capture_output=True, text=True, check=True)
    shimmed = subprocess.run([SYSTEM_PYTHON, "-c", probe], capture_output=True, text=True, check=True,
                             env={**os.environ, "LD_PRELOAD": str(shim)})
    assert plain.stdout.strip() == "True"
    assert shimmed.stdout.strip() == "False"
