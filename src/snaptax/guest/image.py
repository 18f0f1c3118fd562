"""Build (or reuse) the guest: Debian's kernel plus an initramfs with busybox, lvm2, dmsetup, thin_check and fio.

The build is cached in <work dir>/guest/<key>, where the key hashes every input: the kernel .deb, the module list,
each copied binary and library, and the guest's own scripts. A changed input (a new kernel ABI, an upgraded fio,
an edited init.sh) gives a new key and a rebuild; an unchanged one reuses the cached image.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..errors import EngineError
from ..host.procs import run
from .kernel import GUEST_MODULES, KernelDeb, extract_kernel, fetch_kernel, tool, uncompressed_kernel

# Bumped when the layout of the image changes in a way the hashed inputs do not show.
IMAGE_FORMAT = 2   # 2: the kernel stored uncompressed (vmlinux), booted at its PVH entry

# Host executables copied into the guest, at the same paths, with their shared-library closures.
GUEST_TOOLS = ("lvm", "dmsetup", "pdata_tools", "fio")
# Names under which pdata_tools dispatches (it looks at argv[0]).
PDATA_LINKS = ("thin_check", "thin_ls", "thin_dump", "thin_repair", "thin_metadata_size")
LVM_LINKS = ("lvcreate", "lvremove", "lvchange", "lvs", "vgcreate", "vgs", "pvcreate", "pvs", "vgchange")
# The kernel QEMU boots: the package's vmlinuz unpacked to its ELF (kernel.uncompressed_kernel says why).
KERNEL_FILE = "vmlinux"


@dataclass(frozen=True)
class GuestImage:
    kernel: Path
    initrd: Path
    key: str
    provenance: dict

    @property
    def directory(self) -> Path:
        return self.kernel.parent


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_LDD_LINE = re.compile(r"^\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)\s*$")


def ldd_closure(binary: str) -> list[str]:
    """Shared libraries (absolute paths, the dynamic loader included) that `binary` loads."""
    out = run([tool("ldd"), binary]).stdout.decode()
    libs = []
    for line in out.splitlines():
        if "not found" in line:
            raise EngineError(f"ldd {binary}: {line.strip()}")
        m = _LDD_LINE.match(line)
        if m:
            libs.append(m.group(1))
    return libs


def _host_inputs() -> dict[str, str]:
    """Host path -> sha256 of every file copied from the host (tools, libraries, busybox)."""
    files: dict[str, str] = {}
    for name in ("busybox", *GUEST_TOOLS):
        exe = os.path.realpath(tool(name))
        for p in (exe, *ldd_closure(exe)) if name != "busybox" else (exe,):
            if p not in files:
                files[p] = _file_digest(Path(p))
    return files


def _guest_scripts() -> dict[str, str]:
    return {n: (paths.GUEST_DIR / n).read_text() for n in ("init.sh", "lib.sh", "lvm.conf")}


def image_key(deb: KernelDeb, host_files: dict[str, str], scripts: dict[str, str]) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"format": IMAGE_FORMAT, "kernel": deb.sha256, "modules": GUEST_MODULES,
                         "host": sorted(host_files.items()), "scripts": scripts}, sort_keys=True).encode())
    return h.hexdigest()[:16]


def guest_cache_dir(work_dir: Path | None = None) -> Path:
    return (work_dir or paths.work_dir()) / "guest"


def build_image(work_dir: Path | None = None, *, kernel_package: str | None = None,
                force: bool = False) -> GuestImage:
    """The cached guest image for the current inputs, built first if needed (a few seconds plus the download)."""
    cache = guest_cache_dir(work_dir)
    cache.mkdir(parents=True, exist_ok=True)
    deb = fetch_kernel(cache, kernel_package)
    host_files = _host_inputs()
    scripts = _guest_scripts()
    key = image_key(deb, host_files, scripts)
    final = cache / key
    if (final / "provenance.json").exists() and not force:
        os.utime(final)  # marks it in use for _prune
        return _load(final, key)
    t0 = time.monotonic()
    # Built in a sibling temp dir and renamed into place, so a crashed or concurrent build never leaves a
    # half-written image under a valid key.
    with tempfile.TemporaryDirectory(dir=cache, prefix=".build-") as tmp:
        tmp_path = Path(tmp)
        kx = extract_kernel(deb, tmp_path / "kernel")
        root = tmp_path / "root"
        _populate_root(root, kx, host_files, scripts)
        out = tmp_path / "out"
        out.mkdir()
        payload = uncompressed_kernel(kx.vmlinuz, out / KERNEL_FILE)
        _make_cpio(root, out / "initrd.cpio")
        provenance = {
            "key": key,
            "image_format": IMAGE_FORMAT,
            "kernel_package": deb.package,
            "kernel_version": deb.version,
            "kernel_deb_sha256": deb.sha256,
            "kernel_release": kx.release,
            "kernel_boot": f"PVH entry of the uncompressed ELF (the package's bzImage holds it {payload}-compressed)",
            "modules": [str(p.relative_to(kx.modules_root)) for p in kx.modules],
            "host_files": host_files,
            "tool_versions": _tool_versions(),
            "initrd_bytes": (out / "initrd.cpio").stat().st_size,
            "build_seconds": None,
        }
        provenance["build_seconds"] = round(time.monotonic() - t0, 2)
        (out / "provenance.json").write_text(json.dumps(provenance, indent=2, sort_keys=True) + "\n")
        if final.exists() and force:
            # Moved aside first: a guest booting from the old files keeps its open file handles.
            trash = cache / f".old-{key}-{os.getpid()}"
            final.rename(trash)
            shutil.rmtree(trash, ignore_errors=True)
        try:
            out.rename(final)
        except OSError:
            # Another process finished the same build first: its image is identical, use it.
            if not (final / "provenance.json").exists():
                raise
    _prune(cache, keep=final)
    return _load(final, key)


def _prune(cache: Path, keep: Path, keep_images: int = 3, keep_debs: int = 2, min_age_s: float = 3600) -> None:
    """Drop images and kernel packages of superseded inputs (each image is ~100 MB), oldest first.

    Only entries untouched for an hour go, so a guest another process is booting from an older image is spared.
    """
    now = time.time()
    images = sorted((d for d in cache.iterdir() if d.is_dir() and len(d.name) == 16 and d != keep),
                    key=lambda d: d.stat().st_mtime, reverse=True)
    for d in images[keep_images - 1:]:
        if now - d.stat().st_mtime > min_age_s:
            shutil.rmtree(d, ignore_errors=True)
    debs = sorted((cache / "deb").glob("*.deb"), key=lambda p: p.stat().st_mtime, reverse=True)
    for p in debs[keep_debs:]:
        if now - p.stat().st_mtime > min_age_s:
            p.unlink(missing_ok=True)


def _load(final: Path, key: str) -> GuestImage:
    prov = json.loads((final / "provenance.json").read_text())
    return GuestImage(kernel=final / KERNEL_FILE, initrd=final / "initrd.cpio", key=key, provenance=prov)


def _tool_versions() -> dict[str, str]:
    versions = {}
    for pkg in ("fio", "lvm2", "thin-provisioning-tools", "busybox-static", "dmsetup"):
        cp = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True)
        versions[pkg] = cp.stdout.strip() if cp.returncode == 0 else "unknown"
    return versions


def _copy_into(root: Path, host_path: str) -> None:
    dest = root / host_path.lstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(os.path.realpath(host_path), dest)  # dereferenced: a symlinked library becomes a file


def _populate_root(root: Path, kx, host_files: dict[str, str], scripts: dict[str, str]) -> None:
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "etc/lvm", "etc/snaptax", "proc", "sys", "dev", "run",
              "tmp", "in", "out"):
        (root / d).mkdir(parents=True, exist_ok=True)
    # Every file at its host path: libraries where the dynamic loader looks for them, the loader itself at
    # the path written into each binary's PT_INTERP.
    for host_path in host_files:
        _copy_into(root, host_path)
    for name in GUEST_TOOLS:
        exe = os.path.realpath(tool(name))
        link = root / tool(name).lstrip("/")
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(exe, link)
    busybox = root / os.path.realpath(tool("busybox")).lstrip("/")
    shutil.move(busybox, root / "bin" / "busybox")
    applets = subprocess.run([str(root / "bin" / "busybox"), "--list"], capture_output=True, text=True).stdout
    for applet in applets.split():
        if applet in ("busybox",) or (root / "bin" / applet).exists():
            continue
        os.symlink("busybox", root / "bin" / applet)
    # lvm calls /sbin/modprobe for targets it finds missing; busybox's modprobe reads the modules.dep below.
    for name in ("modprobe", "insmod", "poweroff"):
        if not (root / "sbin" / name).exists():
            os.symlink("/bin/busybox", root / "sbin" / name)
    pdata = os.path.realpath(tool("pdata_tools"))
    for name in PDATA_LINKS:
        p = root / "usr/sbin" / name
        if not p.exists():
            os.symlink(pdata, p)
    for name in LVM_LINKS:
        p = root / "usr/sbin" / name
        if not p.exists():
            os.symlink("lvm", p)
    # Kernel modules at their usual place, with a modules.dep made by depmod for this tree.
    guest_mods = []
    for mod in kx.modules:
        rel = mod.relative_to(kx.modules_root)
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(mod, dest)
        guest_mods.append("/" + str(rel))
    for meta in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
        src = kx.modules_root / "lib/modules" / kx.release / meta
        if src.exists():
            shutil.copy2(src, root / "lib/modules" / kx.release / meta)
    run([tool("depmod"), "-b", str(root), kx.release])
    (root / "etc/snaptax/modules").write_text("\n".join(guest_mods) + "\n")
    (root / "init").write_text(scripts["init.sh"])
    (root / "init").chmod(0o755)
    (root / "etc/snaptax/lib.sh").write_text(scripts["lib.sh"])
    (root / "etc/lvm/lvm.conf").write_text(scripts["lvm.conf"])
    try:
        os.mknod(root / "dev/console", 0o600 | 0o020000, os.makedev(5, 1))
    except PermissionError:
        pass  # init reopens /dev/console once devtmpfs is mounted


def _make_cpio(root: Path, dest: Path) -> None:
    """An uncompressed newc archive: the TCG guest unpacks it faster than it would decompress one."""
    names = subprocess.run(["find", ".", "-mindepth", "1"], cwd=root, capture_output=True, check=True).stdout
    names = b"\n".join(sorted(names.split(b"\n"))).strip() + b"\n"
    with open(dest, "wb") as f:
        cp = subprocess.run([tool("cpio"), "--quiet", "-o", "-H", "newc", "--reproducible"], cwd=root,
                            input=names, stdout=f, stderr=subprocess.PIPE)
    if cp.returncode != 0:
        raise EngineError(f"cpio failed: {cp.stderr.decode(errors='replace').strip()[-300:]}")
