"""Boots of the TCG guest: results come back on the xfer disk, failures carry the guest's log, nothing is left."""
from __future__ import annotations

import time

import pytest

from snaptax.guest import kernel as gkernel
from snaptax.guest.image import build_image
from snaptax.guest.kernel import KERNEL_PACKAGE_RE
from snaptax.guest.nbd import RawFileExport, serve_raw_file
from snaptax.guest.vm import GuestConfig, GuestDisk, GuestError, GuestStalled, run_guest
from snaptax.host.procs import ProcessGroup
from tests.processes import processes_mentioning

pytestmark = pytest.mark.guest



@pytest.fixture(scope="module")
def image():
    return build_image()


def test_build_is_cached_and_has_provenance(image):
    t0 = time.monotonic()
    again = build_image()
    assert again.key == image.key and time.monotonic() - t0 < 20
    prov = image.provenance
    assert KERNEL_PACKAGE_RE.match(prov["kernel_package"]) and prov["kernel_version"]
    assert any(m.endswith("dm-thin-pool.ko") for m in prov["modules"])
    assert image.initrd.stat().st_size == prov["initrd_bytes"]
    # QEMU boots the package's kernel unpacked, at its PVH entry (kernel.uncompressed_kernel)
    assert image.kernel.name == "vmlinux" and gkernel.has_pvh_entry(image.kernel.read_bytes())
    assert prov["kernel_boot"].startswith("PVH entry")


def test_results_come_back_on_the_xfer_disk(image, tmp_path):
    # Every byte value, which a serial console would mangle: the data must travel on the disk.
    payload = bytes(range(256)) * 64
    script = """
. /etc/snaptax/lib.sh
cp $IN/payload $OUT/payload
PV=$(disk pv0)
printf 'snaptax-block' | dd of=$PV bs=512 seek=8 conv=fsync 2>/dev/null
dd if=$PV bs=512 skip=8 count=1 2>/dev/null | head -c 13 > $OUT/block
blkstat pv0 > $OUT/stat
echo "snaptax-step one"
sleep 1
echo "snaptax-step two"
"""
    with ProcessGroup() as pg:
        uri = serve_raw_file(pg, RawFileExport(tmp_path / "pv0.img", 64 << 20), tmp_path / "pv0.sock")
        run = run_guest(image, [GuestDisk("pv0", uri)], script, tmp_path / "out", files={"payload": payload},
                        run_dir=tmp_path / "run", pg=pg)
    assert run.rc == 0 and run.boot_to_ready_s and run.boot_to_ready_s < run.wall_s
    # the steps' console lines, stamped on the host's clock: in order, a second apart, inside the run
    one, two = run.step_times["one"], run.step_times["two"]
    assert run.t0 + run.boot_to_ready_s <= one < two <= run.t0 + run.wall_s and two - one > 0.5
    assert (tmp_path / "out/payload").read_bytes() == payload
    assert (tmp_path / "out/block").read_text() == "snaptax-block"
    # The write went through NBD into the host's sparse file.
    with open(tmp_path / "pv0.img", "rb") as f:
        f.seek(8 * 512)
        assert f.read(13) == b"snaptax-block"
    fields = (tmp_path / "out/stat").read_text().split()
    assert fields[0] == "pv0" and int(fields[5]) >= 1  # at least one write completed
    assert not processes_mentioning(str(tmp_path))


def test_script_failure_raises_with_log_tail(image, tmp_path):
    with pytest.raises(GuestError, match=r"(?s)exited 7.*marker-in-guest-log"):
        run_guest(image, [], "echo marker-in-guest-log >&2\nexit 7\n", tmp_path / "out", run_dir=tmp_path / "run")
    assert not processes_mentioning(str(tmp_path))


def test_a_silent_guest_is_stopped_as_stalled(image, tmp_path):
    """A script that prints and then stays silent past the stall limit ends in seconds, not at the run timeout."""
    t0 = time.monotonic()
    with pytest.raises(GuestStalled, match=r"(?s)console silent.*last-words"):
        run_guest(image, [], "echo last-words\nsleep 600\n", tmp_path / "out", run_dir=tmp_path / "run",
                  config=GuestConfig(stall_timeout_s=5))
    assert time.monotonic() - t0 < 90
    assert not processes_mentioning(str(tmp_path))


def test_boot_failure_raises_with_console_tail(image, tmp_path):
    # No init in the initramfs: the kernel panics, panic=-1 and -no-reboot end qemu.
    with pytest.raises(GuestError, match=r"(?s)no results.*(panic|Kernel|init)"):
        run_guest(image, [], "true", tmp_path / "out", run_dir=tmp_path / "run",
                  config=GuestConfig(append="rdinit=/no-such-init", boot_timeout_s=60))
    assert not processes_mentioning(str(tmp_path))


def test_missing_nbd_server_is_one_clear_error(image, tmp_path):
    with pytest.raises(GuestError, match="does not exist"):
        run_guest(image, [GuestDisk("pv0", f"nbd+unix:///x?socket={tmp_path}/none.sock")], "true",
                  tmp_path / "out", run_dir=tmp_path / "run")
