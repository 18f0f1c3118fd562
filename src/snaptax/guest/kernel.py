"""The guest's kernel: a Debian linux-image-6.1.0-*-amd64 package, fetched with apt into the work-dir cache.

The host kernel has no device-mapper, so dm-thin runs in a TCG guest booted from Debian's own kernel. The package
name carries an ABI number (6.1.0-NN) that Debian retires as new point releases land, so it is never hard-coded:
the newest one apt knows is resolved at build time and its exact name, version and SHA-256 go into provenance.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import EngineError, MissingTool
from ..procs import run

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
