"""The guest build: kernel package resolution, ldd closures, the cache key, the qemu command line (no boot)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from snaptax.errors import EngineError, MissingTool
from snaptax.guest import image as gimage, kernel as gkernel
from snaptax.guest.image import GuestImage, image_key, ldd_closure
from snaptax.guest.kernel import KERNEL_PACKAGE_RE, KernelDeb, tool
from snaptax.guest.vm import GuestConfig, GuestDisk, GuestError, NbdUri, qemu_argv


def _deb(sha: str = "a" * 64) -> KernelDeb:
    return KernelDeb("linux-image-6.1.0-56-amd64", "6.1.192-2", Path("/x.deb"), sha)


def test_kernel_package_pattern():
    assert KERNEL_PACKAGE_RE.match("linux-image-6.1.0-56-amd64")
    for bad in ("linux-image-6.1.0-56-cloud-amd64", "linux-image-6.1.0-56-amd64-dbg", "linux-image-amd64",
                "linux-image-6.1.0-56-amd64-unsigned", "linux-image-6.12.0-1-amd64"):
        assert not KERNEL_PACKAGE_RE.match(bad), bad
    assert _deb().release == "6.1.0-56-amd64"


def test_resolve_picks_newest_with_candidate(monkeypatch):
    class CP:
        def __init__(self, out):
            self.stdout = out

    def fake_run(argv, **kw):
        if argv[1] == "pkgnames":
            return CP("linux-image-6.1.0-9-amd64\nlinux-image-6.1.0-10-amd64\nlinux-image-6.1.0-11-amd64\n"
                      "linux-image-6.1.0-12-cloud-amd64\n")
        if argv[2] == "linux-image-6.1.0-11-amd64":
            return CP("linux-image-6.1.0-11-amd64:\n  Installed: (none)\n  Candidate: (none)\n")
        return CP(f"{argv[2]}:\n  Installed: (none)\n  Candidate: 6.1.1-1\n")

    monkeypatch.setattr(gkernel, "tool", lambda name: name)
    monkeypatch.setattr(gkernel.subprocess, "run", fake_run)
    # 10 beats 9 numerically (not as text), and 11 has no installable version.
    assert gkernel.resolve_kernel_package() == "linux-image-6.1.0-10-amd64"


def test_resolve_without_package_lists(monkeypatch):
    class CP:
        stdout = ""

    monkeypatch.setattr(gkernel, "tool", lambda name: name)
    monkeypatch.setattr(gkernel.subprocess, "run", lambda argv, **kw: CP())
    with pytest.raises(EngineError, match="apt-get update"):
        gkernel.resolve_kernel_package()


def test_missing_tool_names_the_package(monkeypatch):
    monkeypatch.setattr(gkernel.shutil, "which", lambda *a, **k: None)
    with pytest.raises(MissingTool, match="busybox-static"):
        tool("busybox")
    with pytest.raises(MissingTool, match="thin-provisioning-tools"):
        tool("pdata_tools")


def test_ldd_closure_includes_the_loader():
    libs = ldd_closure(tool("fio"))
    assert any("ld-linux" in p for p in libs), libs
    assert any("libc.so" in p for p in libs)
    assert all(p.startswith("/") for p in libs)


def test_image_key_tracks_every_input():
    host = {"/usr/bin/fio": "1" * 64, "/lib/x86_64-linux-gnu/libc.so.6": "2" * 64}
    scripts = {"init.sh": "a", "lib.sh": "b", "lvm.conf": "c"}
    base = image_key(_deb(), host, scripts)
    assert base == image_key(_deb(), dict(reversed(list(host.items()))), scripts)  # order-independent
    assert image_key(_deb("b" * 64), host, scripts) != base                       # new kernel
    assert image_key(_deb(), {**host, "/usr/bin/fio": "3" * 64}, scripts) != base  # upgraded fio
    assert image_key(_deb(), host, {**scripts, "init.sh": "a2"}) != base           # edited init


def test_guest_scripts_are_shipped():
    scripts = gimage._guest_scripts()
    assert set(scripts) == {"init.sh", "lib.sh", "lvm.conf"}
    assert "SNAPTAX-READY" in scripts["init.sh"] and "obtain_device_list_from_udev = 0" in scripts["lvm.conf"]


def test_nbd_uri_round_trip():
    u = NbdUri.parse("nbd+unix:///pv0?socket=/run/x/nbd.sock")
    assert u == NbdUri(Path("/run/x/nbd.sock"), "pv0") and str(u) == "nbd+unix:///pv0?socket=/run/x/nbd.sock"
    assert NbdUri.parse("nbd+unix://?socket=/s").export == ""
    for bad in ("nbd://host/x", "nbd+unix:///x", "/tmp/file.img"):
        with pytest.raises(GuestError):
            NbdUri.parse(bad)


def test_guest_disk_validation():
    GuestDisk("pv0", "nbd+unix:///a?socket=/s")
    for serial in ("xfer", "PV0", "0pv", "a" * 21, "pv 0"):
        with pytest.raises(GuestError):
            GuestDisk(serial, "nbd+unix:///a?socket=/s")
    with pytest.raises(GuestError):
        GuestConfig(memory_mib=64)


def test_qemu_argv(tmp_path):
    img = GuestImage(tmp_path / "vmlinuz", tmp_path / "initrd.cpio", "k", {})
    argv = qemu_argv(img, [GuestDisk("pv0", "nbd+unix:///e?socket=/s.sock")], tmp_path / "xfer.img",
                     GuestConfig(memory_mib=512), in_bytes=1234)
    text = " ".join(argv)
    assert "-accel tcg" in text and "-m 512" in text and "-no-reboot" in text
    assert "snaptax.in_bytes=1234" in text and "panic=-1" in text
    nbd = json.loads(argv[argv.index("-blockdev") + 1])
    assert nbd == {"driver": "nbd", "node-name": "d0", "server": {"type": "unix", "path": "/s.sock"},
                   "export": "e"}
    assert "virtio-blk-pci,drive=d0,serial=pv0" in argv and "virtio-blk-pci,drive=xfer,serial=xfer" in argv


# ---------------------------------------------------------------- the kernel unpacked for its PVH entry

def _elf(notes: list[tuple[bytes, int]]) -> bytes:
    """A minimal ELF64 whose one PT_NOTE segment holds `notes` (name, type), each with a 4-byte descriptor."""
    import struct
    body = b"".join(struct.pack("<III", len(name) + 1, 4, n_type) + (name + b"\0").ljust((len(name) + 4) // 4 * 4,
                                                                                         b"\0") + b"\x00\x10\x00\x01"
                    for name, n_type in notes)
    header = b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 64, 0, 0, 64, 56, 1,
                                                             0, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", gkernel.PT_NOTE, 4, 64 + 56, 0, 0, len(body), len(body), 4)
    return header + phdr + body


def _bzimage(payload: bytes, version: int = 0x20F, setup_sects: int = 3) -> bytes:
    import struct
    setup = bytearray((setup_sects + 1) * 512)
    setup[0x1F1] = setup_sects
    setup[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", setup, 0x206, version)
    struct.pack_into("<II", setup, 0x248, 100, len(payload))
    return bytes(setup) + bytes(100) + payload + bytes(16)


@pytest.mark.parametrize("fmt", ["xz", "gzip"])
def test_the_kernel_comes_out_of_its_bzimage_as_the_elf_it_holds(tmp_path, fmt):
    import gzip
    import lzma
    elf = _elf([(b"Xen", 6), (b"Linux", 18), (b"Xen", gkernel.XEN_ELFNOTE_PHYS32_ENTRY)])
    packed = (lzma.compress(elf, format=lzma.FORMAT_XZ) if fmt == "xz" else gzip.compress(elf))
    bz = tmp_path / "vmlinuz"
    bz.write_bytes(_bzimage(packed + len(elf).to_bytes(4, "little")))
    assert gkernel.uncompressed_kernel(bz, tmp_path / "vmlinux") == fmt
    assert (tmp_path / "vmlinux").read_bytes() == elf


def test_a_kernel_without_a_pvh_entry_or_with_a_bad_payload_is_refused(tmp_path):
    import lzma
    no_pvh = _elf([(b"Xen", 6), (b"Linux", gkernel.XEN_ELFNOTE_PHYS32_ENTRY)])   # type 18, but not Xen's note
    assert not gkernel.has_pvh_entry(no_pvh)
    cases = {
        "CONFIG_PVH": _bzimage(lzma.compress(no_pvh) + len(no_pvh).to_bytes(4, "little")),
        "header says": _bzimage(lzma.compress(no_pvh) + (len(no_pvh) + 1).to_bytes(4, "little")),
        "other than xz or gzip": _bzimage(b"\x28\xb5\x2f\xfd" + bytes(20)),
        "predates 2.08": _bzimage(b"x" * 20, version=0x207),
        "not a bzImage": b"MZ" + bytes(1000),
    }
    for words, image in cases.items():
        (tmp_path / "vmlinuz").write_bytes(image)
        with pytest.raises(EngineError, match=words):
            gkernel.uncompressed_kernel(tmp_path / "vmlinuz", tmp_path / "vmlinux")
        assert not (tmp_path / "vmlinux").exists()
