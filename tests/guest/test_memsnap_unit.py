"""The guest memory dump's pieces that need no guest: the dirtier's script, request validation, the console reader
(fio terse status lines stamped with the host's clock) and the progress rate."""
from __future__ import annotations

import pytest

from snaptax.guest.memsnap import (
    START_MARK,
    Dirtier,
    DumpRequest,
    Sample,
    _Console,
    probe_background_snapshot,
    progress_rate,
)
from snaptax.guest.vm import GuestError
from snaptax.host.qmp import QMPError

MiB = 1 << 20


def terse(job: str, write_kb: int, runtime_ms: int) -> str:
    """A fio 3.33 terse v3 status line with the write totals in fields 47 and 50 (1-based)."""
    f = ["3", "fio-3.33", job] + ["0"] * 127
    f[46], f[49] = str(write_kb), str(runtime_ms)
    return ";".join(f)


def test_dirtier_script_fills_then_dirties_and_probes():
    s = Dirtier(fill_mib=160, dirty_pages_s=256, report_s=0.5).script()
    fill, start, run = s.index("--name=fill"), s.index(START_MARK), s.index("--name=dirty")
    assert fill < start < run
    assert "--size=160m" in s and "--rate_iops=256" in s and "--status-interval=500ms" in s
    assert "--name=probe --filename=/tmp/probe --size=1024k" in s and "--ioengine=mmap" in s


def test_dirtier_sizes_tmp_for_its_files_before_the_fill():
    # /tmp's default tmpfs is half the guest's RAM: a 4 GiB guest's 3872 MiB fill failed in it (ENOSPC, issue 49)
    s = Dirtier(fill_mib=3872, probe_kib=1024).script()
    remount = s.index("mount -o remount,size=")
    assert remount < s.index("--name=fill")
    size_mib = int(s[remount:].split("size=", 1)[1].split("m", 1)[0])
    assert 3872 + 1 < size_mib <= 3872 + 1 + 64


@pytest.mark.parametrize("kwargs", [dict(fill_mib=0), dict(fill_mib=8, dirty_pages_s=0),
                                    dict(fill_mib=8, report_s=0.01)])
def test_dirtier_refuses_nonsense(kwargs):
    with pytest.raises(GuestError, match="guest dirtier"):
        Dirtier(**kwargs)


def test_dump_request_validation():
    DumpRequest("precopy", 64 * MiB)
    with pytest.raises(GuestError, match="one of background-snapshot, precopy"):
        DumpRequest("snapshot-save", 64 * MiB)       # a stun, not a lazy checkpoint: not offered
    with pytest.raises(GuestError, match="bandwidth"):
        DumpRequest("precopy", 1000)


def test_console_reads_complete_lines_and_stamps_them(tmp_path):
    log = tmp_path / "console.log"
    log.write_text("booting\n" + terse("probe", 4000, 1000) + "\n" + terse("dirty", 40, 1000)[:30])
    c = _Console(log, t0=0.0)
    c.poll()
    assert [s.job for s in c.samples] == ["probe"] and c.samples[0].pages == 1000 and c.samples[0].runtime_s == 1
    with open(log, "a") as f:   # the rest of the partial line arrives later
        f.write(terse("dirty", 40, 1000)[30:] + "\r\n" + START_MARK + "\n")
    c.poll()
    assert [s.job for s in c.samples] == ["probe", "dirty"] and c.samples[1].pages == 10
    assert c.seen(START_MARK) and not c.seen("SNAPTAX-DONE")


def test_progress_rate_uses_fios_runtime_inside_the_window():
    s = [Sample(t, "probe", pages, rt) for t, pages, rt in
         [(1.0, 0, 0.5), (2.0, 1000, 1.5), (3.0, 1500, 2.5), (4.0, 2500, 3.5)]]
    s.append(Sample(2.5, "dirty", 7, 1.0))
    assert progress_rate(s, "probe", 1.5, 4.0) == pytest.approx(1500 / 2.0)
    assert progress_rate(s, "probe", 3.5, 4.0) is None        # one line inside: no rate


class _FakeQMP:
    def __init__(self, refuse: bool):
        self.refuse, self.calls = refuse, []

    def execute(self, command, **args):
        self.calls.append((command, args))
        if self.refuse and args["capabilities"][0]["state"]:
            raise QMPError(command, {"class": "GenericError", "desc": "Background-snapshot is not supported"})


def test_background_snapshot_probe_reports_qemus_reason():
    ok, why = probe_background_snapshot(_FakeQMP(refuse=True))
    assert not ok and "not supported" in why
    q = _FakeQMP(refuse=False)
    assert probe_background_snapshot(q) == (True, "accepted")
    assert [c[1]["capabilities"][0]["state"] for c in q.calls] == [True, False]   # left off afterwards
