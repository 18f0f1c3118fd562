"""serve() + nbdkit + fio/nbdsh end to end: data integrity, counters, clean-up."""
import json
import os
import shutil
import subprocess

import pytest

from snaptax import fio
from snaptax.errors import ConfigError
from snaptax.host.procs import ProcessGroup
from snaptax.lock import measurement_lock
from snaptax.spindle.profiles import DiskSpec, ZeroProfile
from snaptax.spindle.rigfiles import parse_device
from snaptax.spindle.serve import SpindleDevice, serve

pytestmark = pytest.mark.integration
needs = pytest.mark.skipif(not (shutil.which("nbdkit") and shutil.which("fio") and shutil.which("nbdsh")),
                           reason="needs nbdkit, fio, nbdsh")


# nbdsh is a python3 script: it needs Debian's python3 (python3-libnbd), whatever python3 comes first on PATH
NBDSH_ENV = {**os.environ, "PATH": "/usr/bin:/bin:" + os.environ.get("PATH", "")}


def _nbdkit_pids(sock):
    out = subprocess.run(["pgrep", "-f", f"nbdkit.*{sock}"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@needs
def test_raid1_data_integrity_counters_and_cleanup(work_dir):
    spec = parse_device({"device": "raid1_10k"}, "test")
    dev = SpindleDevice(spec, 64 << 20, work_dir, "r1")
    with measurement_lock(), ProcessGroup() as group:
        with serve(group, dev) as s:
            assert s.uri.startswith("nbd+unix:///?socket=")
            # fio writes a verifiable pattern and reads it back through the emulator (snaptax.fio runs fio in
            # its own directory under work_dir, so nothing, not even a verify state file, lands in the cwd)
            job = fio.FioJob("v", "randwrite", bs=4096, iodepth=8, size=1 << 20, time_based=False,
                             runtime_s=None, verify="crc32c", log_avg_msec=None)
            res = fio.run(job, fio.FioTarget("nbd", uri=s.uri), work_dir / "fio-verify").result
            assert res["jobs"][0]["error"] == 0
            assert not list(work_dir.rglob("*-verify.state"))
            # bytes written through NBD are in the backing file at their logical offsets
            script = ("h.pwrite(b'snaptax!' * 512, 1 << 20)\n"
                      "assert h.pread(4096, 1 << 20) == b'snaptax!' * 512\n")
            subprocess.run(["nbdsh", "-u", s.uri, "-c", script], check=True, timeout=60, env=NBDSH_ENV)
            with open(dev.backing, "rb") as f:
                f.seek(1 << 20)
                assert f.read(4096) == b"snaptax!" * 512
            pids = _nbdkit_pids(s.socket)
            assert pids
        # after serve(): daemon gone, socket gone, final counters written
        assert not _nbdkit_pids(dev.socket)
        assert not dev.socket.exists()
        c = json.loads(dev.counters.read_text())
        m0, m1 = c["members"]
        assert m0["writes"] == m1["writes"] >= 256          # RAID1: every write on both mirrors
        assert c["array"]["writes"] >= 257
        assert m0["reads"] + m1["reads"] >= 256             # verify reads split over the mirrors
        assert sum(m0["seek_hist_log2_cyl"]) > 0
    assert not dev.backing.exists()                          # the group removed the scratch backing file


@needs
def test_zero_device_counts(work_dir):
    dev = SpindleDevice(DiskSpec(ZeroProfile()), 16 << 20, work_dir, "z")
    with measurement_lock(), ProcessGroup() as group, serve(group, dev) as s:
        subprocess.run(["nbdsh", "-u", s.uri, "-c", "for i in range(200): h.pread(4096, i * 4096)"],
                       check=True, timeout=60, env=NBDSH_ENV)
    c = json.loads(dev.counters.read_text())
    assert c["array"]["reads"] == 200


@needs
def test_startup_failure_is_reported_and_cleaned(work_dir):
    dev = SpindleDevice(DiskSpec(ZeroProfile()), 1000, work_dir, "bad")
    with pytest.raises(ConfigError, match="capacity"):
        with ProcessGroup() as group, serve(group, dev):
            pass
    assert not _nbdkit_pids(dev.socket)


@needs
def test_tier_pool_served_counts_where_io_landed(work_dir):
    # the plugin runs the Tier under Debian's python3: the per-tier counters must reach the counters file
    from snaptax.spindle.serve import flat_counters
    dev = SpindleDevice(parse_device({"device": "tier_pool"}, "test"), 64 << 20, work_dir, "tier")
    script = ("h.pwrite(b'a' * 4096, 0)\n"                      # small write: allocates extent 0 on HDD
              "h.pwrite(b'b' * (256 << 10), 16 << 20)\n"        # large write: extent 1, no heat
              "h.pread(4096, 0)\n"
              "h.pread(4096, 48 << 20)\n")                      # never written: zeros, no media access
    with measurement_lock(), ProcessGroup() as group, serve(group, dev) as s:
        subprocess.run(["nbdsh", "-u", s.uri, "-c", script], check=True, timeout=60, env=NBDSH_ENV)
    flat = flat_counters(json.loads(dev.counters.read_text()))
    assert (flat["host.hdd_writes"], flat["host.hdd_reads"], flat["host.unmapped_reads"]) == (2, 1, 1)
    assert flat["host.ssd_reads"] == flat["host.ssd_writes"] == 0
    assert flat["host.hdd_bytes_written"] == 4096 + (256 << 10) and flat["host.unmapped_bytes_read"] == 4096
    assert (flat["host.heat_ios"], flat["host.heat_ignored_ios"]) == (3, 1)
