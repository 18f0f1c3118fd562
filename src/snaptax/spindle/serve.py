"""serve(): an emulated spindle (drive or array) on an NBD unix socket, inside a ProcessGroup.

    from snaptax.procs import ProcessGroup
    from snaptax.spindle.serve import SpindleDevice, serve
    from snaptax.spindle.rigfiles import disk

    with ProcessGroup() as group:
        dev = SpindleDevice(spec=disk("sas10k"), capacity=1 << 30, workdir=Path("/var/tmp/snaptax/x"))
        with serve(group, dev) as served:
            ...  # fio --ioengine=nbd --uri=served.uri ; counters in served.counters (JSON, rewritten every 0.5 s)

On leaving the `with` (normally, on error or Ctrl-C) nbdkit is stopped (it writes the final counters),
and the socket, spec file and — unless keep_backing — the backing file are removed by the group.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket as socketlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .. import procs
from ..errors import ConfigError, EngineError
from .profiles import DeviceSpec, describe, to_json, validate_spec

PLUGIN = Path(__file__).with_name("plugin.py")
SRC_DIR = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class SpindleDevice:
    """What to serve. `name` prefixes every file made in `workdir`: NAME.img (backing, sparse),
    NAME.sock, NAME.spec.json, NAME.counters.json, NAME.nbdkit.log (kept, like the counters, for post-mortems)."""

    spec: DeviceSpec
    capacity: int
    workdir: Path
    name: str = "spindle"
    keep_backing: bool = False
    threads: int = 64              # nbdkit worker threads per connection: ≥ the deepest queue a client uses
    counters_interval_s: float = 0.5

    @property
    def backing(self) -> Path:
        return self.workdir / f"{self.name}.img"

    @property
    def socket(self) -> Path:
        return self.workdir / f"{self.name}.sock"

    @property
    def counters(self) -> Path:
        return self.workdir / f"{self.name}.counters.json"


@dataclass(frozen=True)
class Served:
    uri: str
    socket: Path
    counters: Path
    size: int
    label: str

    def read_counters(self) -> dict:
        """The latest counters snapshot (see arrays.Simulator.counters for the fields)."""
        return json.loads(self.counters.read_text())


def _socket_ready(path: Path) -> bool:
    if not path.exists():
        return False
    s = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
    try:
        s.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


@contextlib.contextmanager
def serve(group: procs.ProcessGroup, device: SpindleDevice) -> Iterator[Served]:
    source = f"spindle device {device.name!r}"
    if device.capacity <= 0 or device.capacity % 512:
        raise ConfigError(source, "capacity", f"must be a positive multiple of 512 bytes, got {device.capacity}")
    if device.threads < 1:
        raise ConfigError(source, "threads", "must be at least 1")
    validate_spec(device.spec, source)
    procs.require("nbdkit")
    device.workdir.mkdir(parents=True, exist_ok=True)
    if len(str(device.socket)) > 100:   # sun_path is 108 bytes
        raise ConfigError(source, "workdir", f"socket path too long for a unix socket: {device.socket}")

    backing = device.backing
    if not device.keep_backing:
        group.own(backing)
    if not backing.exists() or backing.stat().st_size < device.capacity:
        with open(backing, "ab") as f:
            os.ftruncate(f.fileno(), device.capacity)   # sparse: only written blocks take space
    spec_path = group.own(device.workdir / f"{device.name}.spec.json")
    spec_path.write_text(json.dumps({"spec": to_json(device.spec), "capacity": device.capacity,
                                     "name": device.name}, indent=1))
    sock = group.own(device.socket)
    with contextlib.suppress(FileNotFoundError):
        sock.unlink()
    log = device.workdir / f"{device.name}.nbdkit.log"
    argv = ["nbdkit", "-f", "-U", str(sock), "-t", str(device.threads), "python", str(PLUGIN),
            f"srcdir={SRC_DIR}", f"spec={spec_path}", f"file={backing}", f"counters={device.counters}",
            f"interval={device.counters_interval_s}"]
    child = group.spawn(argv, name=f"nbdkit[{device.name}]", log_path=log, ready=lambda: _socket_ready(sock),
                        ready_timeout=30)
    try:
        yield Served(uri=f"nbd+unix:///?socket={sock}", socket=sock, counters=device.counters,
                     size=device.capacity, label=describe(device.spec))
    except BaseException:
        group.stop(child, grace=10)
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()
        raise
    # SIGTERM: nbdkit unloads the plugin, which writes the final counters
    group.stop(child, grace=10)
    with contextlib.suppress(FileNotFoundError):
        sock.unlink()   # nbdkit leaves its socket behind
    if child.proc.returncode not in (0, -signal.SIGTERM):
        raise EngineError(f"nbdkit[{device.name}] exited {child.proc.returncode}: {child.log_tail()}")
