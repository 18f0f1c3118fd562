"""A TCG guest that runs Linux device-mapper (dm-thin, dm-snapshot) where the host kernel has none.

  build_image()   Debian's kernel (newest linux-image-6.1.0-*-amd64 apt knows) + an initramfs with busybox, lvm2,
                  dmsetup, thin_check and fio; cached in <work dir>/guest/<hash of inputs>   (image.py, kernel.py)
  run_guest()     boot it under TCG with NBD exports as virtio disks, run one sh script, return its $OUT as files
                  carried on a second virtio disk (never scraped from the console)           (vm.py)
  serve_raw_file() a sparse raw file served by qemu-storage-daemon, for a quick NBD disk     (nbd.py)
Its boot time is a `make bench` group (snaptax.bench.guest).
"""
from .image import GuestImage, build_image
from .nbd import RawFileExport, serve_raw_file
from .vm import GuestConfig, GuestDisk, GuestError, GuestRun, NbdUri, run_guest

__all__ = ["GuestImage", "build_image", "RawFileExport", "serve_raw_file", "GuestConfig", "GuestDisk", "GuestError",
           "GuestRun", "NbdUri", "run_guest"]
