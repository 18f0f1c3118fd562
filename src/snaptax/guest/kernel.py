"""The guest's kernel: a Debian linux-image-6.1.0-*-amd64 package, fetched with apt into the work-dir cache.

The host kernel has no device-mapper, so dm-thin runs in a TCG guest booted from Debian's own kernel. The package
name carries an ABI number (6.1.0-NN) that Debian retires as new point releases land, so it is never hard-coded:
the newest one apt knows is resolved at build time and its exact name, version and SHA-256 go into provenance.
"""
from __future__ import annotations

import hashlib
import lzma
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import EngineError, MissingTool
from ..host.procs import run

# Debian 12's kernel series; dm-thin/dm-snapshot behaviour is what that release ships.
KERNEL_PACKAGE_RE = re.compile(r"^linux-image-6\.1\.0-(\d+)-amd64$")

# Modules the guest needs, in load order. crc32c_generic must precede dm_thin_pool (the pool's metadata
# checksums need a crc32c provider; the accelerated crc32c-intel may be refused on some vCPU models).
GUEST_MODULES = (
    "virtio_pci", "virtio_blk", "crc32c_generic", "dm_mod", "dm_bufio", "dm_bio_prison",
    "dm_persistent_data", "dm_thin_pool", "dm_snapshot",
)

# Executable -> Debian package providing it, for the one-line MissingTool.
TOOL_PACKAGES = {
    "apt-get": "apt", "apt-cache": "apt", "dpkg-deb": "dpkg", "depmod": "kmod", "modprobe": "kmod",
    "busybox": "busybox-static", "cpio": "cpio", "lvm": "lvm2", "dmsetup": "dmsetup",
    "pdata_tools": "thin-provisioning-tools", "thin_check": "thin-provisioning-tools", "fio": "fio",
    "ldd": "libc-bin", "qemu-system-x86_64": "qemu-system-x86", "qemu-storage-daemon": "qemu-system-common",
    "nbdkit": "nbdkit",
}


def tool(name: str) -> str:
    """Absolute path of a host tool, or MissingTool naming its Debian package."""
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    if not path:
        raise MissingTool(name, TOOL_PACKAGES.get(name, name))
    return path


@dataclass(frozen=True)
class KernelDeb:
    package: str      # e.g. linux-image-6.1.0-56-amd64
    version: str      # Debian version, e.g. 6.1.192-2
    path: Path        # the .deb in the cache
    sha256: str

    @property
    def release(self) -> str:
        """`uname -r` of this kernel (the modules directory name)."""
        return self.package.removeprefix("linux-image-")


def resolve_kernel_package() -> str:
    """Newest linux-image-6.1.0-NN-amd64 that apt can install (has a candidate version)."""
    apt_cache = tool("apt-cache")
    names = subprocess.run([apt_cache, "pkgnames", "linux-image-6.1.0-"], capture_output=True, text=True).stdout
    abis = sorted((int(m.group(1)), n) for n in names.split() if (m := KERNEL_PACKAGE_RE.match(n)))
    for _, name in reversed(abis):
        policy = subprocess.run([apt_cache, "policy", name], capture_output=True, text=True).stdout
        cand = re.search(r"Candidate:\s*(\S+)", policy)
        if cand and cand.group(1) != "(none)":
            return name
    raise EngineError("apt knows no linux-image-6.1.0-*-amd64 package: run 'apt-get update' "
                      "(a Debian 12 package list is needed to fetch the guest kernel)")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _deb_field(deb: Path, field: str) -> str:
    return run([tool("dpkg-deb"), "-f", str(deb), field]).stdout.decode().strip()


def fetch_kernel(cache_dir: Path, package: str | None = None) -> KernelDeb:
    """The kernel .deb in cache_dir/deb, downloaded with `apt-get download` if it is not there yet.

    With no package named, the newest one apt knows is used. If apt cannot be asked (no package lists), a .deb
    already in the cache is used so that an offline re-run still works.
    """
    deb_dir = cache_dir / "deb"
    deb_dir.mkdir(parents=True, exist_ok=True)
    try:
        name = package or resolve_kernel_package()
    except (EngineError, MissingTool):
        cached = sorted(deb_dir.glob("linux-image-6.1.0-*-amd64_*.deb"),
                        key=lambda p: int(p.name.split("-")[4]) if p.name.split("-")[4].isdigit() else -1)
        if package or not cached:
            raise
        name = cached[-1].name.split("_")[0]
    if not KERNEL_PACKAGE_RE.match(name):
        raise EngineError(f"guest kernel package '{name}' is not of the form linux-image-6.1.0-NN-amd64")
    found = sorted(deb_dir.glob(f"{name}_*_amd64.deb"))
    if not found:
        # Download into a private temp dir first: a half-fetched .deb must never be taken for a cached one.
        with tempfile.TemporaryDirectory(dir=deb_dir) as tmp:
            tmp_path = Path(tmp)
            tmp_path.chmod(0o755)  # apt drops privileges to _apt for downloads where it can
            run([tool("apt-get"), "download", "-q", name], cwd=tmp_path, timeout=900)
            debs = list(tmp_path.glob(f"{name}_*.deb"))
            if len(debs) != 1:
                raise EngineError(f"apt-get download {name} produced no single .deb in {tmp_path}")
            debs[0].rename(deb_dir / debs[0].name)
        found = sorted(deb_dir.glob(f"{name}_*_amd64.deb"))
    deb = found[-1]
    return KernelDeb(package=name, version=_deb_field(deb, "Version"), path=deb, sha256=_sha256(deb))


@dataclass(frozen=True)
class ExtractedKernel:
    vmlinuz: Path
    modules: list[Path]    # absolute paths in load order (dependencies first)
    modules_root: Path     # the directory that holds lib/modules/<release>
    release: str


def extract_kernel(deb: KernelDeb, dest: Path, modules: tuple[str, ...] = GUEST_MODULES) -> ExtractedKernel:
    """Unpack vmlinuz and lib/modules into dest and resolve the module closure with the host's kmod.

    The closure (and its order) comes from the package's own modules.dep rebuilt by `depmod -b`, so a module
    that gains a dependency in a later kernel is picked up without a change here.
    """
    dest.mkdir(parents=True, exist_ok=True)
    deb_tar = subprocess.Popen([tool("dpkg-deb"), "--fsys-tarfile", str(deb.path)], stdout=subprocess.PIPE)
    try:
        tar = subprocess.run(["tar", "-x", "-C", str(dest), "./boot", "./lib/modules"], stdin=deb_tar.stdout,
                             capture_output=True)
    finally:
        assert deb_tar.stdout is not None
        deb_tar.stdout.close()
        deb_tar.wait()
    if tar.returncode != 0 or deb_tar.returncode != 0:
        raise EngineError(f"unpacking {deb.path.name} failed: {tar.stderr.decode(errors='replace').strip()[-300:]}")
    release = deb.release
    vmlinuz = dest / "boot" / f"vmlinuz-{release}"
    if not vmlinuz.exists():
        raise EngineError(f"{deb.path.name} has no boot/vmlinuz-{release}")
    run([tool("depmod"), "-b", str(dest), release])
    ordered: list[Path] = []
    for mod in modules:
        out = run([tool("modprobe"), "-d", str(dest), "-S", release, "--show-depends", mod]).stdout.decode()
        for line in out.splitlines():
            parts = line.split()
            if parts and parts[0] == "insmod":
                p = Path(parts[1])
                if p not in ordered:
                    ordered.append(p)
            elif parts and parts[0] == "builtin":
                continue  # compiled into this kernel: nothing to load
    return ExtractedKernel(vmlinuz=vmlinuz, modules=ordered, modules_root=dest, release=release)


# The bzImage's setup header (Linux's Documentation/arch/x86/boot.rst): setup_sects at 0x1f1, "HdrS" at 0x202, the
# boot protocol version at 0x206, payload_offset and payload_length at 0x248 and 0x24c (protocol 2.08 and later),
# counted from the protected-mode code after the (setup_sects + 1) * 512 bytes of real-mode setup.
_SETUP_SECTS, _HDRS, _VERSION, _PAYLOAD = 0x1F1, 0x202, 0x206, 0x248
# The ELF note by which a kernel offers its 32-bit PVH entry point (Xen's public elfnote.h); QEMU's -kernel boots
# an ELF that carries it directly, through its pvh.bin option ROM.
XEN_ELFNOTE_PHYS32_ENTRY = 18
PT_NOTE = 4


def bzimage_payload(image: bytes) -> tuple[str, bytes]:
    """The compressed kernel inside a bzImage: (its format, 'xz' or 'gzip', and its bytes as the image holds them,
    the 4-byte little-endian uncompressed size appended by the kernel's build last)."""
    if len(image) < 0x250 or image[_HDRS:_HDRS + 4] != b"HdrS":
        raise EngineError("the guest kernel is not a bzImage (no 'HdrS' setup header)")
    version = int.from_bytes(image[_VERSION:_VERSION + 2], "little")
    if version < 0x208:
        raise EngineError(f"the guest kernel's boot protocol {version >> 8}.{version & 0xff:02d} predates 2.08: "
                          "its header does not locate the compressed kernel")
    setup_sects = image[_SETUP_SECTS] or 4          # 0 means 4 (boot.rst)
    offset = int.from_bytes(image[_PAYLOAD:_PAYLOAD + 4], "little")
    length = int.from_bytes(image[_PAYLOAD + 4:_PAYLOAD + 8], "little")
    start = (setup_sects + 1) * 512 + offset
    payload = image[start:start + length]
    if len(payload) != length or length < 8:
        raise EngineError(f"the guest kernel's payload ({length} bytes at {start}) lies beyond its end")
    if payload.startswith(b"\xfd7zXZ\x00"):
        return "xz", payload
    if payload.startswith(b"\x1f\x8b"):
        return "gzip", payload
    raise EngineError(f"the guest kernel is compressed in a format other than xz or gzip "
                      f"(payload starts {payload[:4].hex()})")


def decompress_payload(fmt: str, payload: bytes) -> bytes:
    """The uncompressed kernel (an ELF), checked against the size the build appended to the payload."""
    want = int.from_bytes(payload[-4:], "little")
    if fmt == "xz":
        d: lzma.LZMADecompressor | zlib._Decompress = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    else:
        d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(payload)
    except (lzma.LZMAError, zlib.error) as e:
        raise EngineError(f"the guest kernel's {fmt} payload does not decompress: {e}") from None
    if len(out) != want:
        raise EngineError(f"the guest kernel's {fmt} payload decompressed to {len(out)} bytes, its header says {want}")
    return out


def has_pvh_entry(elf: bytes) -> bool:
    """Whether a 64-bit little-endian ELF carries the XEN_ELFNOTE_PHYS32_ENTRY note in a PT_NOTE segment."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise EngineError("the guest kernel's payload is not a 64-bit little-endian ELF")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        if p_type != PT_NOTE:
            continue
        pos, end = p_offset, p_offset + p_filesz
        while pos + 12 <= end:
            namesz, descsz, n_type = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and n_type == XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def uncompressed_kernel(vmlinuz: Path, dest: Path) -> str:
    """Write the ELF kernel inside the bzImage `vmlinuz` to `dest`; returns the payload's compression.

    Why: under TCG, booting the bzImage runs SeaBIOS's Linux loader and then the kernel's own xz decompression
    in emulated code, about 5 s of every boot; QEMU loads the uncompressed ELF straight into guest memory and
    enters it at its PVH entry. The same kernel boots either way. A kernel built without CONFIG_PVH is refused.
    """
    fmt, payload = bzimage_payload(vmlinuz.read_bytes())
    elf = decompress_payload(fmt, payload)
    if not has_pvh_entry(elf):
        raise EngineError(f"{vmlinuz.name} has no PVH entry note (a kernel built without CONFIG_PVH): "
                          "QEMU cannot boot its uncompressed image directly")
    dest.write_bytes(elf)
    return fmt
