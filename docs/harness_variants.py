"""The measurement path's bench (snaptax.bench.harness) with one daemon option changed, for side experiments that
decide what the project uses. Reproduces the numbers in docs/harness-daemon.md:

    .venv/bin/python docs/harness_variants.py default 3
    .venv/bin/python docs/harness_variants.py iothread 3     # needs QEMU >= 9.0's qemu-storage-daemon on PATH

`iothread` adds `--object iothread,id=io0` before `--nbd-server` and exports every node with `iothread=io0`
(QEMU 7.2 aborts when a client disconnects from such an export; see ../shared/notes/platform.md). QEMU 10.0's
daemon runs from a private directory on bookworm's own libraries, without touching the installed QEMU:

    echo "deb http://deb.debian.org/debian bookworm-backports main" > /tmp/bp.list
    APT="-o Dir::Etc::SourceList=/tmp/bp.list -o Dir::Etc::SourceParts=/dev/null \\
         -o Dir::State::Lists=/tmp/bp-lists -o Dir::Cache=/tmp/bp-cache"
    mkdir -p /tmp/bp-lists/partial /tmp/bp-cache/archives/partial
    apt-get $APT update && apt-get $APT download qemu-utils/bookworm-backports && dpkg -x qemu-utils_*.deb /tmp/q10
    PATH=/tmp/q10/usr/bin:$PATH .venv/bin/python docs/harness_variants.py iothread 3

The bench takes the machine-wide measurement lock itself; run nothing else meanwhile.
"""
from __future__ import annotations

import sys

from snaptax.bench import harness
from snaptax.host import procs, qsd


def with_iothread() -> None:
    spawn, execute = procs.ProcessGroup.spawn, qsd.StorageDaemon.execute

    def spawn_with_iothread(self, argv, *args, **kwargs):  # type: ignore[no-untyped-def]
        if argv and argv[0].endswith("qemu-storage-daemon"):
            i = argv.index("--nbd-server")          # the iothread object must exist before the server
            argv = [*argv[:i], "--object", "iothread,id=io0", *argv[i:]]
        return spawn(self, argv, *args, **kwargs)

    def export_in_iothread(self, command, **arguments):  # type: ignore[no-untyped-def]
        if command == "block-export-add":
            arguments["iothread"] = "io0"
        return execute(self, command, **arguments)

    procs.ProcessGroup.spawn = spawn_with_iothread  # type: ignore[method-assign]
    qsd.StorageDaemon.execute = export_in_iothread  # type: ignore[method-assign]


if __name__ == "__main__":
    variant, rounds = sys.argv[1], int(sys.argv[2])
    if variant == "iothread":
        with_iothread()
    elif variant != "default":
        raise SystemExit(f"harness_variants: variant must be 'default' or 'iothread', got {variant!r}")
    out = harness.harness(rounds=rounds)
    for key in sorted(out):
        if key.endswith("_over_direct") or key.startswith("harness_qsd_cpu_us"):
            print(f"{variant:10s} {key:45s} {out[key]:.3f}")
