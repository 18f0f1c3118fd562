"""serve(): an emulated spindle (drive or array) on an NBD unix socket, inside a ProcessGroup.

    from snaptax.host.procs import ProcessGroup
    from snaptax.spindle.serve import SpindleDevice, serve
    from snaptax.spindle.rigfiles import disk

    with ProcessGroup() as group:
        dev = SpindleDevice(spec=disk("sas10k"), capacity=1 << 30, work_dir=Path("/var/tmp/snaptax/x"))
        with serve(group, dev) as served:
            ...  # fio --ioengine=nbd --uri=served.uri ; counters in served.counters (JSON, rewritten every 0.5 s)

On leaving the `with` (normally, on error or Ctrl-C) nbdkit is stopped (it writes the final counters),
and the socket, spec file and — unless keep_backing — the backing file are removed by the group.

Two emulators serve the same model and write the same counters file: the compiled plugin (`plugin="c"`, the
default: spindle_plugin.c with the model core spindle_core.c, built by spindle.build) and the Python plugin
(`plugin="python"`: plugin.py driving arrays.Simulator under nbdkit's python plugin), kept selectable for
comparisons and debugging. The Python one cannot keep time at flash speed or under load (the GIL and its
per-command work under one lock); tests/spindle/test_cmodel.py holds the two models to the same schedule.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .. import paths
from ..errors import ConfigError, EngineError
from ..host import procs
from .cspec import flat_spec
from .profiles import DeviceSpec, describe, to_json, validate_spec

PLUGIN = Path(__file__).with_name("plugin.py")
PluginKind = Literal["c", "python"]
PLUGINS: tuple[PluginKind, ...] = ("c", "python")
DEFAULT_PLUGIN: PluginKind = "c"


@dataclass(frozen=True)
class SpindleDevice:
    """What to serve. `name` prefixes every file made in `work_dir`: NAME.img (backing, sparse),
    NAME.sock, NAME.spec.json, NAME.counters.json, NAME.nbdkit.log (kept, like the counters, for post-mortems)."""

    spec: DeviceSpec
    capacity: int
    work_dir: Path
    name: str = "spindle"
    keep_backing: bool = False
    threads: int = 64              # nbdkit worker threads per connection: ≥ the deepest queue a client uses
    counters_interval_s: float = 0.5
    plugin: PluginKind = DEFAULT_PLUGIN   # "c" (compiled) or "python" (plugin.py, the reference's own emulator)
    # C plugin only (spindle_plugin.c says why): a fixed spin margin before each completion (None: adaptive), the
    # request threads' SCHED_FIFO priority (0: not real-time), the CPU latency request held while serving (None: none)
    spin_us: float | None = None
    rt_priority: int = 10
    cpu_latency_us: int | None = 0

    @property
    def backing(self) -> Path:
        return self.work_dir / f"{self.name}.img"

    @property
    def socket(self) -> Path:
        return self.work_dir / f"{self.name}.sock"

    @property
    def counters(self) -> Path:
        return self.work_dir / f"{self.name}.counters.json"


@dataclass(frozen=True)
class Served:
    uri: str
    socket: Path
    counters: Path
    size: int
    label: str


@contextlib.contextmanager
def serve(group: procs.ProcessGroup, device: SpindleDevice) -> Iterator[Served]:
    source = f"spindle device {device.name!r}"
    if device.capacity <= 0 or device.capacity % 512:
        raise ConfigError(source, "capacity", f"must be a positive multiple of 512 bytes, got {device.capacity}")
    if device.threads < 1:
        raise ConfigError(source, "threads", "must be at least 1")
    if device.plugin not in PLUGINS:
        raise ConfigError(source, "plugin", f"{device.plugin!r} is not one of {', '.join(PLUGINS)}")
    if device.spin_us is not None and device.spin_us < 0:
        raise ConfigError(source, "spin_us", f"must be >= 0 µs, got {device.spin_us}")
    if not 0 <= device.rt_priority <= 99:
        raise ConfigError(source, "rt_priority", f"must be 0 (off) to 99, got {device.rt_priority}")
    if device.cpu_latency_us is not None and device.cpu_latency_us < 0:
        raise ConfigError(source, "cpu_latency_us", f"must be >= 0 µs or None, got {device.cpu_latency_us}")
    validate_spec(device.spec, source)
    procs.require("nbdkit")
    plugin_so = None
    if device.plugin == "c":
        from .build import ensure_plugin
        plugin_so = ensure_plugin()   # MissingTool naming the Debian package when gcc or a header is missing
    device.work_dir.mkdir(parents=True, exist_ok=True)
    if len(str(device.socket)) > 100:   # sun_path is 108 bytes
        raise ConfigError(source, "work_dir", f"socket path too long for a unix socket: {device.socket}")

    backing = device.backing
    if not device.keep_backing:
        group.own(backing)
    if not backing.exists() or backing.stat().st_size < device.capacity:
        with open(backing, "ab") as f:
            os.ftruncate(f.fileno(), device.capacity)   # sparse: only written blocks take space
    sock = group.own(device.socket)
    with contextlib.suppress(FileNotFoundError):
        sock.unlink()
    log = device.work_dir / f"{device.name}.nbdkit.log"
    common = [f"file={backing}", f"counters={device.counters}", f"interval={device.counters_interval_s}"]
    if plugin_so is not None:
        spec_path = group.own(device.work_dir / f"{device.name}.spec.txt")
        spec_path.write_text(flat_spec(device.spec, device.capacity, device.name))
        spin = [] if device.spin_us is None else [f"spin_us={device.spin_us:g}"]
        spin += [f"rt_priority={device.rt_priority}",
                 f"cpu_latency_us={'off' if device.cpu_latency_us is None else device.cpu_latency_us}"]
        argv = ["nbdkit", "-f", "-U", str(sock), "-t", str(device.threads), str(plugin_so), f"spec={spec_path}",
                *common, *spin]
    else:
        spec_path = group.own(device.work_dir / f"{device.name}.spec.json")
        spec_path.write_text(json.dumps({"spec": to_json(device.spec), "capacity": device.capacity,
                                         "name": device.name}, indent=1))
        argv = ["nbdkit", "-f", "-U", str(sock), "-t", str(device.threads), "python", str(PLUGIN),
                f"srcdir={paths.SRC_DIR}", f"spec={spec_path}", *common]
    child = group.spawn(argv, name=f"nbdkit[{device.name}]", log_path=log,
                        ready=lambda: procs.unix_socket_accepts(sock), ready_timeout=30)
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


# ------------------------------------------------------------------ rig devices (snaptax.host.backends)

RIG_COUNTERS_INTERVAL_S = 0.2


@dataclass(frozen=True)
class RigSpindle:
    """An emulated rig device as snaptax.host.backends wants it: an NBD socket (default export) and a zero-argument
    callable returning cumulative host-level and emulator counters (catalogue names, see flat_counters)."""

    served: Served
    spec: object
    export: str | None = None

    @property
    def socket(self) -> Path:
        return self.served.socket

    def counters(self) -> dict[str, float]:
        return flat_counters(fresh_counters(self.served.counters))

    def levels(self) -> dict[str, Any]:
        """Commands outstanding now: per member drive, the array's, and the emulator's own block (levels are not
        counters, so flat_counters leaves them out)."""
        raw = fresh_counters(self.served.counters)
        return {"members_queue_depth": [m.get("queue_depth") for m in raw.get("members", [])],
                "array": {k: v for k, v in raw.get("array", {}).items() if "queue" in k or "outstanding" in k},
                "emulator": {k: v for k, v in raw.get("emulator", {}).items() if not isinstance(v, list)}}


def fresh_counters(path: Path, timeout_s: float = 5.0) -> dict:
    """The counters as of now: waits (≤ one dump interval) for a dump written after this call, so every command
    completed before the call is in them."""
    import time

    t_call = time.time()
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if path.stat().st_mtime >= t_call:
                return json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            pass
        if time.monotonic() > deadline:
            return json.loads(path.read_text()) if path.exists() else {}
        time.sleep(0.02)


_ARRAY_KEYS = ("reads", "writes", "bytes_read", "bytes_written")
_TIER_LANDED = tuple(f"{tier}_{what}" for tier in ("ssd", "hdd")
                     for what in ("reads", "writes", "bytes_read", "bytes_written"))
_ARRAY_EXTRAS = ("rmw_rows", "full_stripe_rows", "promotions", "demotions", "migrated_bytes", "tier_cycles",
                 *_TIER_LANDED, "unmapped_reads", "unmapped_bytes_read", "split_reads", "split_writes",
                 "heat_ios", "heat_ignored_ios", "latency_s_sum", "cache_read_hits", "cache_write_backs",
                 "cache_full_stalls", "cache_destages", "cache_destaged_bytes")
_MEMBER_KEYS = ("reads", "writes", "bytes_read", "bytes_written", "busy_s", "cache_hits")
_EMULATOR_KEYS = ("released", "release_late_s_sum", "flushes_released", "flush_late_s_sum", "idle_arrivals",
                  "idle_gap_s_sum", "self_timed", "boundary_s_sum", "model_s_sum", "spin_s_sum", "spin_denied")


def flat_counters(raw: dict) -> dict[str, float]:
    """Counters JSON (arrays.Simulator.counters + the plugin's "emulator" block) → catalogue name → number
    (snaptax.counters), all cumulative so that a before/after difference is the work of one measurement:
      host.reads, host.writes, host.bytes_read, host.bytes_written   commands the array received (host level)
      host.rmw_rows, host.full_stripe_rows, host.promotions, …       array extras (RAID5 rows, tier migrations)
      host.latency_s_sum                                             Σ host commands' time in the array
      host.ssd_reads, host.hdd_bytes_written, host.split_reads, …     a tiered pool: where host I/O landed
      host.cache_read_hits, host.cache_full_stalls, …                 an array controller's write cache
      host.member<i>.reads … .busy_s, .cache_hits                    what each member drive did
      host.member_reads, host.member_writes                          summed over members
      emulator.released, emulator.release_late_s_sum, …              the emulator's own timing (flushes
      emulator.flushes_released, emulator.flush_late_s_sum            also on their own)
      emulator.boundary_s_sum, emulator.model_s_sum                   the C plugin's replies: callback entry to
                                                                      return (real) and submission to completion
                                                                      (simulated); their ratio is its accuracy
    Levels (queue depths, means, extents on SSD) are left out: they are not counters."""
    out: dict[str, float] = {}
    arr = raw.get("array", {})
    for k in (*_ARRAY_KEYS, *_ARRAY_EXTRAS):
        if k in arr:
            out[f"host.{k}"] = float(arr[k])
    members = raw.get("members", [])
    for i, m in enumerate(members):
        for k in _MEMBER_KEYS:
            if k in m:
                out[f"host.member{i}.{k}"] = float(m[k])
    out["host.member_reads"] = float(sum(m.get("reads", 0) for m in members))
    out["host.member_writes"] = float(sum(m.get("writes", 0) for m in members))
    emu = raw.get("emulator", {})
    for k in _EMULATOR_KEYS:
        if k in emu:
            out[f"emulator.{k}"] = float(emu[k])
    return out


def _safe_name(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "spindle"


def serve_device(rig, device, group: procs.ProcessGroup, tag: str = "") -> RigSpindle:
    """Serve a rig's `type: spindle` device until `group` closes (its `spindle:` mapping was validated when the rig
    was loaded; it is parsed again here into the typed spec). The backing file is scratch: removed on close."""
    from .rigfiles import parse_device

    spec = parse_device(device.spindle, rig.source, f"devices.{device.name}.spindle")
    name = _safe_name(f"{device.name}-{tag}" if tag else device.name)
    dev = SpindleDevice(spec=spec, capacity=device.capacity, work_dir=rig.rig_work_dir / "spindles", name=name,
                        counters_interval_s=RIG_COUNTERS_INTERVAL_S)
    cm = serve(group, dev)
    served = cm.__enter__()

    def stop() -> None:
        cm.__exit__(None, None, None)

    group.defer(stop)
    return RigSpindle(served, spec)
