"""A real memory dump of a running TCG guest: it completes with the guest running, and leaves no QEMU process, dump
file, xfer disk or QMP socket behind — after success, after a failure, and after Ctrl-C (SIGINT)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from snaptax import paths
from snaptax.guest.image import build_image
from snaptax.guest.memsnap import Dirtier, DumpRequest, run_memsnap
from snaptax.guest.vm import GuestError
from tests.processes import processes_mentioning

pytestmark = pytest.mark.guest
MiB = 1 << 20
LEFT_BEHIND = ("memsnap-dump.bin", "memsnap-qmp.sock", "memsnap-xfer.img")


@pytest.fixture(scope="module")
def image():
    return build_image()


@pytest.fixture
def scratch():
    # Under /var/tmp (the rig's kind of disk), unique per test: its name is how we find our qemu.
    d = Path("/var/tmp/snaptax-tests") / f"memsnap-{os.getpid()}-{time.monotonic_ns()}"
    yield d
    subprocess.run(["rm", "-rf", str(d)], check=False)


def nothing_left(scratch: Path) -> None:
    assert processes_mentioning(str(scratch)) == []
    assert [n for n in LEFT_BEHIND if (scratch / n).exists()] == []


def test_dumps_complete_with_the_guest_running_and_leave_nothing(image, scratch):
    run = run_memsnap(image, Dirtier(fill_mib=64, report_s=0.5),
                      [DumpRequest("background-snapshot", 1 << 40, 1.0), DumpRequest("precopy", 128 * MiB, 1.0)],
                      memory_mib=384, scratch=scratch, warmup_s=1.0)
    nothing_left(scratch)
    assert [d.status for d in run.dumps] == ["completed", "completed"]
    ram = 384 * MiB
    for d in run.dumps:
        # the whole RAM is accounted for; the filled part (non-zero) is written out
        assert d.ram_total_bytes >= ram and d.file_bytes > 64 * MiB and d.dump_s > 0
        # QEMU counts the pages it sent whole (the filled 64 MiB at least) and those it found all-zero
        assert d.normal_pages is not None and d.normal_pages * 4096 >= 64 * MiB and d.zero_pages is not None
    bg, pre = run.dumps
    assert run.background_snapshot
    assert pre.dirty_sync_count and pre.dirty_sync_count >= 1
    # the guest kept running: its probe reported progress during each dump
    for d in run.dumps:
        assert any(s.job == "probe" and d.start_s <= s.t <= d.end_s + 0.6 for s in run.samples)


def test_a_failed_dump_leaves_nothing(image, scratch):
    # 1 MiB/s cannot save 384 MiB within the 2 s allowed: the dump is cancelled and the run raises
    with pytest.raises(GuestError, match="not finished after 2 s"):
        run_memsnap(image, Dirtier(fill_mib=16), [DumpRequest("precopy", MiB, 1.0)], memory_mib=384,
                    scratch=scratch, warmup_s=0.5, dump_timeout_s=2.0)
    nothing_left(scratch)


def _as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_a_dump_leaves_nothing(image, scratch):
    code = textwrap.dedent(f"""
        from pathlib import Path
        from snaptax.guest.image import build_image
        from snaptax.guest.memsnap import Dirtier, DumpRequest, run_memsnap
        run_memsnap(build_image(), Dirtier(fill_mib=16), [DumpRequest("precopy", 1 << 20, 1.0)], memory_mib=384,
                    scratch=Path({str(scratch)!r}), warmup_s=0.5)
    """)
    env = dict(os.environ, PYTHONPATH=str(paths.REPO_ROOT / "src"))
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)
    deadline = time.monotonic() + 120
    while not ((scratch / "memsnap-dump.bin").exists() and (scratch / "memsnap-dump.bin").stat().st_size > MiB):
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the dump never started"
        time.sleep(0.1)
    assert processes_mentioning(str(scratch))
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and b"KeyboardInterrupt" in err
    time.sleep(0.3)
    nothing_left(scratch)


@pytest.mark.integration
@pytest.mark.skipif(os.geteuid() != 0, reason="the study's devices need root (loop devices)")
def test_ctrl_c_in_the_studys_guest_phase_leaves_nothing_and_publishes_nothing(data_dir, work_dir):
    """The study's guest phase inside its RunSession, as its measure reaches it after the host-side plan (left out
    here: ~60 s of fio; the CLI's own Ctrl-C path, exit 130, is tests/test_interrupt.py's)."""
    code = textwrap.dedent("""
        from snaptax import profiles
        from snaptax.host import rig as rigmod
        from snaptax.record import RunSession
        from snaptax.studies.memory_dump import measure, plan as planmod
        profile, rig = profiles.get("smoke"), rigmod.load("local")
        with RunSession(rig, planmod.STUDY, profile, {}) as session:
            measure.guest_phase(rig, profile, session)
    """)
    env = dict(os.environ, SNAPTAX_DATA_DIR=str(data_dir), SNAPTAX_WORK_DIR=str(work_dir),
               PYTHONPATH=str(paths.REPO_ROOT / "src"))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=paths.REPO_ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_as_from_a_terminal)
    dump = work_dir / "local" / "memdump-guest" / "memsnap-dump.bin"
    deadline = time.monotonic() + 300
    while not (dump.exists() and dump.stat().st_size > MiB):
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the study never reached its guest phase's first dump"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and b"KeyboardInterrupt" in err, err.decode()[-2000:]
    time.sleep(0.3)
    assert processes_mentioning(str(work_dir)) == []
    assert not (work_dir / "local" / "memdump-guest").exists()
    assert not list(work_dir.glob("local/staging/memory_dump/*"))
    assert not list((data_dir / "local" / "memory_dump").glob("*")) if data_dir.exists() else True
