"""The NBD client side of fio's nbd engine: simple replies, as a VM's block layer sees its disk.

QEMU's NBD server answers a read from a client that negotiated structured replies (libnbd's default) with the data
and then the block status of the same range, which looks the qcow2 L2 entry up a second time (docs/science-plan.md
§9). A guest's virtio disk asks no block status. `simple_replies.c`, preloaded into fio, makes every libnbd handle
fio creates ask for simple replies, so a read through the harness costs the metadata lookups it costs a VM.
"""
from __future__ import annotations

from pathlib import Path

from .. import cbuild
from ..paths import NBD_SIMPLE_REPLIES_SHIM, NBD_SIMPLE_REPLIES_SOURCE

HEADERS = (("libnbd.h", "libnbd-dev"),)


def build_shim(cc: str | None = None, *, output: Path = NBD_SIMPLE_REPLIES_SHIM, force: bool = False) -> Path:
    """The preloadable shim, compiled when missing or older than its source (or `force`)."""
    return cbuild.compile_shared([NBD_SIMPLE_REPLIES_SOURCE], output, headers=HEADERS, libs=("-lnbd", "-ldl"),
                                 cc=cc, force=force)


def simple_replies_environment() -> dict[str, str]:
    """What fio's environment needs for its nbd engine to ask for simple replies (the shim built if needed)."""
    return {"LD_PRELOAD": str(build_shim())}
