"""The qcow2 redo-log engine: QEMU's analogue of VMware's SEsparse / vSANsparse delta disks.

The base disk is a raw region of the rig device (a flat, thick "VMDK"). Each snapshot adds a qcow2 overlay in a
new region of the same device, attached live over QMP (blockdev-create, blockdev-add with backing: null,
blockdev-snapshot); the NBD export follows the active layer. Deleting merges a layer into its parent:
`newest` is an active commit (mirror in background mode: wait for BLOCK_JOB_READY, then job-complete), `oldest`
an intermediate commit of the first overlay into the base (finishes by itself).

Parameters with large effects (platform notes): the L2 cache (too small for the image ⇒ 2–3 backend I/Os per
read, metadata effectively on disk as with SEsparse; covering the image ⇒ in-memory metadata as with
vSANsparse), cluster size and `extended_l2` (subclusters avoid the copy of backing data on a first partial
write), and `cache-clean-interval`.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypeVar

from .. import fio, paths
from ..errors import ConfigError, EngineError
from ..host import procs
from ..host.backends import open_device
from ..host.procs import ProcessGroup
from ..host.qmp import block_job_ready
from ..host.qsd import DeviceRegion, RegionStore, StorageDaemon
from ..host.rig import Device, Rig
from ..plan import split_replicate
from ..timeline import Load, Timeline, stunned, wait_event
from .base import SnapshotEngine

if TYPE_CHECKING:
    from ..plan import StudyPlan
    from ..record import RunSession

EXPORT = "vd"
FLAT_EXPORT = "flat"      # the no-snapshot control volume (flat_target)


@dataclass(frozen=True)
class Qcow2Config:
    """One qcow2 overlay configuration.

    cluster_size: bytes per cluster (512 B … 2 MiB, power of two); extended_l2 needs ≥ 16 KiB.
    l2_cache_size: bytes of L2 cache per layer (None: QEMU's default, 1 MiB ≈ 8 GiB of 64 KiB clusters);
    l2_cache_entry_size: bytes per cache entry (a slice of an L2 table; None: one cluster).
    cache_clean_interval: seconds after which unused cache entries are dropped (None: QEMU's 600 s).
    """

    name: str
    cluster_size: int = 64 << 10
    extended_l2: bool = False
    l2_cache_size: int | None = None
    l2_cache_entry_size: int | None = None
    cache_clean_interval: int | None = None
    analogue: str = ""

    def __post_init__(self) -> None:
        src = f"qcow2 config {self.name!r}"
        cs = self.cluster_size
        if cs < 512 or cs > (2 << 20) or cs & (cs - 1):
            raise ConfigError(src, "cluster_size", f"{cs} is not a power of two in 512 B…2 MiB")
        if self.extended_l2 and cs < (16 << 10):
            raise ConfigError(src, "extended_l2", "needs cluster_size ≥ 16 KiB")
        if self.l2_cache_entry_size is not None:
            es = self.l2_cache_entry_size
            if es < 512 or es > cs or es & (es - 1):
                raise ConfigError(src, "l2_cache_entry_size", f"{es} is not a power of two in 512 B…cluster")

    def l2_bytes_for(self, virtual_size: int) -> int:
        """Bytes of L2 tables needed to map `virtual_size` fully (8 B per entry, 16 B with extended_l2)."""
        entry = 16 if self.extended_l2 else 8
        return -(-virtual_size // self.cluster_size) * entry

    def open_options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {}
        if self.l2_cache_size is not None:
            opts["l2-cache-size"] = self.l2_cache_size
        if self.l2_cache_entry_size is not None:
            opts["l2-cache-entry-size"] = self.l2_cache_entry_size
        if self.cache_clean_interval is not None:
            opts["cache-clean-interval"] = self.cache_clean_interval
        return opts


L2_SLICE = 4096  # bytes per L2 cache entry: fine-grained so "1/8 of the tables" is meaningful on small disks


def l2_cache_size_for(l2_total: int, coverage: Fraction, cluster_size: int) -> int:
    """Bytes of L2 cache (entries of L2_SLICE) holding a fraction `coverage` (0 < c ≤ 1) of an image's `l2_total`
    bytes of L2 tables: whole slices, at least two (QEMU's minimum); full coverage gets one cluster more than the
    tables, so every lookup stays in memory."""
    if coverage == 1:
        return l2_total + cluster_size
    return max(2 * L2_SLICE, int(l2_total * coverage) // L2_SLICE * L2_SLICE)


# The presets' coverages where no operating point has been inferred: one eighth of the tables (on disk) and all of
# them (in memory). Chosen before operating points were inferred (issue 46): a run at them says so (its parameters
# record no operating point).
PRESET_COVERAGES = (Fraction(1, 8), Fraction(1))


def nearest_coverage(coverage: float, disk_size: int, extended_l2: bool = True) -> Fraction:
    """The coverage a cache of whole L2 slices realises nearest to `coverage` (0 ≤ c ≤ 1: none, as seed 000's
    inferred point may be, is the two slices QEMU requires) for an image of `disk_size` bytes: n / N of its N slices,
    at least two."""
    if not (0 <= coverage <= 1):
        raise ConfigError("qcow2", "coverage", f"{coverage!r} is not in [0, 1]")
    slices = max(1, Qcow2Config("probe", extended_l2=extended_l2).l2_bytes_for(disk_size) // L2_SLICE)
    return Fraction(min(slices, max(2, round(coverage * slices))), slices)


def metadata_configs(disk_size: int, coverages: tuple[Fraction, Fraction] = PRESET_COVERAGES) \
        -> tuple[Qcow2Config, Qcow2Config]:
    """The two redo-log configurations that differ only in where the metadata lives (seed 001's stand-ins), each
    with an L2 cache holding `coverages` of the image's L2 tables (snaptax.standins: inferred per rig where an
    operating point is, else PRESET_COVERAGES):
      on-disk-metadata    most lookups read metadata from disk, as SEsparse's (VMFS) grain tables not held in memory;
      in-memory-metadata  lookups stay in memory, as vSANsparse's in-memory metadata cache.
    Both use 64 KiB clusters with extended L2 (2 KiB subclusters), so a first 4 KiB write does not copy backing
    data (SEsparse's grain is 4 KiB)."""
    probe = Qcow2Config("probe", extended_l2=True)
    l2_total = probe.l2_bytes_for(disk_size)
    on_disk, in_memory = (l2_cache_size_for(l2_total, c, probe.cluster_size) for c in coverages)
    return (
        Qcow2Config("on-disk-metadata", extended_l2=True, l2_cache_size=on_disk, l2_cache_entry_size=L2_SLICE,
                    analogue="SEsparse (VMFS)"),
        Qcow2Config("in-memory-metadata", extended_l2=True, l2_cache_size=in_memory,
                    l2_cache_entry_size=L2_SLICE, analogue="vSANsparse (vSAN)"),
    )


@dataclass
class _Layer:
    name: str          # qcow2 node name (the base layer is the raw region node)
    region: DeviceRegion


class Qcow2ChainEngine(SnapshotEngine):
    """A live volume of `disk_size` bytes on one rig device, with a chain of qcow2 overlays."""

    kind = "qcow2"

    def __init__(self, rig: Rig, device: Device, config: Qcow2Config, disk_size: int,
                 commit_timeout_s: float = 1800):
        if disk_size > device.capacity:
            raise ConfigError(rig.source, f"devices.{device.name}.capacity",
                              f"smaller than the study's disk size {disk_size}")
        self.rig, self.device, self.config, self.disk_size = rig, device, config, disk_size
        self.commit_timeout_s = commit_timeout_s
        self.group = ProcessGroup()
        self.layers: list[_Layer] = []
        self._serial = 0
        self._views: set[str] = set()
        self.daemon: StorageDaemon | None = None
        self.store: RegionStore | None = None
        self._flat: DeviceRegion | None = None

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> Qcow2ChainEngine:
        try:
            tag = f"qcow2-{self.config.name}"
            backend = open_device(self.rig, self.device, self.group, tag=tag)
            self._host_counters = backend.host_counters
            self._levels = backend.levels
            self.daemon = StorageDaemon(self.group, paths.engine_run_dir(self.rig.rig_work_dir, tag)).start()
            self.store = RegionStore(self.daemon, backend.protocol(), self.device.capacity)
            base = self.store.allocate(self.disk_size, "base")
            self.layers.append(_Layer(base.node, base))
            self.uri = self.daemon.export(base.node, EXPORT)
        except BaseException:
            self.group.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.daemon and self.daemon.qmp:
            self.daemon.qmp.close()
        self.group.close()

    def diagnose(self, wait_s: float = 2.0, qmp_timeout_s: float = 5.0) -> dict[str, Any]:
        """Which side holds a request when a timeline hangs (studies.lifecycle.plan.HANG_NOTE), read before anything
        is stopped: the device's counters twice, `wait_s` apart (does it still complete commands?) and, emulated,
        its queued commands; for every process the engine started (daemon, emulator, fio) each thread's state,
        kernel wait channel and CPU seconds over those `wait_s` (asleep, or spinning?); whether the daemon answers
        `query-block-jobs` within `qmp_timeout_s` (one stuck in a drain does not: its monitor waits with it).
        Never raises: a part that cannot be read says why."""
        out: dict[str, Any] = {}

        def part(name: str, read: Any) -> None:
            try:
                out[name] = read()
            except Exception as exc:  # noqa: BLE001 - a diagnosis reports what it could not read
                out[name] = f"unreadable: {type(exc).__name__}: {exc}"[:200]
        live = [(c.name, c.proc.pid) for c in self.group.children if c.proc.poll() is None]
        first, cpu0 = self._host_counters(), {pid: procs.threads(pid) for _, pid in live}
        time.sleep(wait_s)
        second, cpu1 = self._host_counters(), {pid: procs.threads(pid) for _, pid in live}
        keys = ("host.reads", "host.writes", "emulator.released")
        out["device_progress"] = {k: second[k] - first[k] for k in keys if k in first and k in second}
        out["device_totals"] = {k: second[k] for k in keys if k in second}
        if self._levels is not None:
            part("device_levels", self._levels)
        out["processes"] = {f"{name}[{pid}]": [
            {**{k: v for k, v in th.items() if k != "cpu_s"},
             "cpu_s_in_window": round(th["cpu_s"] - next((b["cpu_s"] for b in cpu0[pid] if b["tid"] == th["tid"]),
                                                         th["cpu_s"]), 3)}
            for th in cpu1[pid]] for name, pid in live}
        daemon = self.daemon
        qmp = daemon.qmp if daemon is not None else None
        if qmp is not None and qmp._sock is not None:
            def jobs() -> Any:
                assert qmp is not None and qmp._sock is not None
                sock = qmp._sock
                previous = sock.gettimeout()
                sock.settimeout(qmp_timeout_s)
                try:
                    return qmp.execute("query-block-jobs")
                except (TimeoutError, OSError):
                    return f"no reply within {qmp_timeout_s:g} s"
                finally:
                    sock.settimeout(previous)
            part("qmp_block_jobs", jobs)
        return out

    # ------------------------------------------------------------ interface
    @property
    def chain_length(self) -> int:
        return len(self.layers) - 1

    def fio_target(self) -> fio.FioTarget:
        return fio.FioTarget("nbd", uri=self.uri)

    def _overlay_region_size(self) -> int:
        # Data plus L2 tables plus refcount blocks and headers; generous so a commit into an overlay fits.
        return self.disk_size + 2 * self.config.l2_bytes_for(self.disk_size) + 4 * self.config.cluster_size + (16 << 20)

    def take_snapshot(self) -> str:
        assert self.daemon and self.store
        self._serial += 1
        name = f"snap{self._serial}"
        region = self.store.allocate(self._overlay_region_size(), name)
        q = self.daemon.qmp
        assert q is not None
        create = {"driver": "qcow2", "file": region.node, "size": self.disk_size,
                  "cluster-size": self.config.cluster_size, "version": "v3"}
        if self.config.extended_l2:
            create["extended-l2"] = True
        q.run_job("blockdev-create", f"create-{name}", options=create, timeout=120)
        q.execute("blockdev-add", driver="qcow2", **{"node-name": name}, file=region.node, backing=None,
                  **self.config.open_options())
        q.execute("blockdev-snapshot", node=self.layers[-1].name, overlay=name)
        self.layers.append(_Layer(name, region))
        return name

    def set_cache(self, coverage: Fraction) -> dict[str, Any]:
        """Reopen the newest overlay with an L2 cache holding `coverage` of its tables (whole slices, at least
        QEMU's two: l2_cache_size_for at the nearest whole slice); its backing, file and every other option as it
        was opened. Returns the cache size set and the coverage it realises."""
        assert self.daemon and self.daemon.qmp
        if self.chain_length == 0:
            raise EngineError("no overlay to resize the cache of: take a snapshot first")
        realised = nearest_coverage(float(coverage), self.disk_size, self.config.extended_l2)
        l2_total = self.config.l2_bytes_for(self.disk_size)
        size = l2_cache_size_for(l2_total, realised, self.config.cluster_size)
        top, below = self.layers[-1], self.layers[-2]
        options = {"driver": "qcow2", "node-name": top.name, "file": top.region.node, "backing": below.name,
                   **self.config.open_options(), "l2-cache-size": size}
        self.daemon.qmp.execute("blockdev-reopen", options=[options])
        return {"l2_cache_size": size, "realised": float(realised)}

    def layer_bytes(self, index: int) -> float:
        """Highest offset written in layer `index`'s region: the qcow2 image's allocated size, metadata included."""
        assert self.daemon
        node = self.layers[index].region.node
        for s in self.daemon.execute("query-blockstats", **{"query-nodes": True}):
            if s.get("node-name") == node:
                return float(s["stats"]["wr_highest_offset"])
        return 0.0

    def delete_snapshot(self, which: str = "newest") -> str:
        if self.chain_length == 0:
            raise EngineError("no snapshot to delete")
        assert self.daemon and self.store and self.daemon.qmp
        q = self.daemon.qmp
        active = self.layers[-1].name
        job = f"commit{self._serial}-{len(self.layers)}"
        self._serial += 1
        if which == "newest" or self.chain_length == 1:
            top, base = self.layers[-1], self.layers[-2]
            q.execute("block-commit", **{"job-id": job, "device": active, "base-node": base.name,
                                         "auto-dismiss": False})
            q.wait_block_job_ready(job, timeout=self.commit_timeout_s)
            q.execute("job-complete", id=job)
        elif which == "oldest":
            top, base = self.layers[1], self.layers[0]
            q.execute("block-commit", **{"job-id": job, "device": active, "top-node": top.name,
                                         "base-node": base.name, "auto-dismiss": False})
        else:
            raise ConfigError("delete_snapshot", "which", f"{which!r} is not 'newest' or 'oldest'")
        q.wait_job(job, "concluded", timeout=self.commit_timeout_s)
        self.layers.remove(top)
        q.execute("blockdev-del", **{"node-name": top.name})
        self.store.free(top.region)
        return top.name

    def flat_target(self) -> fio.FioTarget:
        """A raw region of disk_size on the same device, in the same daemon, exported as `flat` (made on first
        use, removed with the engine): the no-snapshot control measured beside the chain."""
        assert self.daemon and self.store
        if self._flat is None:
            self._flat = self.store.allocate(self.disk_size, "flat")
            self.daemon.export(self._flat.node, FLAT_EXPORT)
        return fio.FioTarget("nbd", uri=self.daemon.uri(FLAT_EXPORT))

    def clone(self, target: str = "live") -> int:
        """A full copy of the active layer's view (qemu-storage-daemon's blockdev-backup, sync=full: every cluster
        read through the chain, written to a raw region of the same device), or of the flat control's, then the
        copy's region freed."""
        assert self.daemon and self.store and self.daemon.qmp
        if target == "flat":
            self.flat_target()
            assert self._flat is not None
            source = self._flat.node
        elif target == "live":
            source = self.layers[-1].name
        else:
            raise ConfigError("clone", "target", f"{target!r} is not 'live' or 'flat'")
        self._serial += 1
        region = self.store.allocate(self.disk_size, f"clone{self._serial}")
        try:
            self.daemon.qmp.run_job("blockdev-backup", f"clone{self._serial}", timeout=self.commit_timeout_s,
                                    device=source, target=region.node, sync="full", **{"auto-dismiss": False})
        finally:
            self.store.free(region)
        return self.disk_size

    def view_target(self, layer: int) -> fio.FioTarget:
        """A read-only NBD export of layer `layer` (0 = base): the point-in-time view taken when layer
        `layer + 1` was created, for integrity checks."""
        assert self.daemon
        node = self.layers[layer].name
        name = f"view-{node}"
        if name not in self._views:
            self.daemon.execute("block-export-add", id=f"exp-{name}", type="nbd", **{"node-name": node},
                                name=name, writable=False)
            self._views.add(name)
        return fio.FioTarget("nbd", uri=self.daemon.uri(name))

    def close_views(self) -> None:
        assert self.daemon
        for name in sorted(self._views):
            self.daemon.unexport(name)
        self._views.clear()

    def counters(self) -> dict[str, float]:
        """Host-level I/O of the rig device (what the 'disk' received, below the whole qcow2 chain), and
        engine.snapshot_allocated_bytes: the space all overlays take (0 without snapshots)."""
        out = self._host_counters()
        out["engine.snapshot_allocated_bytes"] = 0.0
        if self.chain_length and self.daemon and self.daemon.qmp:
            # qcow2 allocates clusters (data, L2 tables, refcount blocks) by appending to its file, so the highest
            # offset ever written in an overlay's region is that image's allocated size, metadata included.
            nodes = {layer.region.node for layer in self.layers[1:]}
            for s in self.daemon.execute("query-blockstats", **{"query-nodes": True}):
                if s.get("node-name") in nodes:
                    out["engine.snapshot_allocated_bytes"] += float(s["stats"]["wr_highest_offset"])
        return out

    def describe(self) -> dict[str, Any]:
        return {"engine": self.kind, "config": asdict(self.config), "disk_size": self.disk_size,
                "device": self.device.name, "export": EXPORT}


def execute_per_config(rig: Rig, device: Device, configs: Mapping[str, Qcow2Config], study: StudyPlan,
                       disk_size: int, session: RunSession) -> None:
    """Every variant of `study` on its own fresh volume of `disk_size` on `device`, with the qcow2 config named as
    the variant (the studies that compare redo-log configurations: chain_length, metadata_cache); a replicate of a
    variant (plan.replicate_name) gets its variant's config."""
    for vp in study.variants:
        with Qcow2ChainEngine(rig, device, configs[split_replicate(vp.variant)[0]], disk_size) as engine:
            with session.in_variant(vp.variant, engine.describe()):
                engine.execute(vp.plan, session)


Q = TypeVar("Q", bound=Qcow2ChainEngine)     # the chain engine or a study's own kind of it (lifecycle)


def delete_active(tl: Timeline[Q], load: Load) -> dict[str, Any]:
    """Delete the newest snapshot under the timeline's load by QEMU's active commit: block-commit of the active
    layer; it pivots (job-complete, with the guest stunned: timeline.stunned) once READY."""
    e = tl.engine
    assert e.daemon and e.daemon.qmp
    q = e.daemon.qmp
    job = f"activecommit{e._serial}"
    e._serial += 1
    top, base = e.layers[-1], e.layers[-2]
    t0 = tl.now()
    tl.event("delete_start", method="active", delta_bytes=e.layer_bytes(1))
    q.execute("block-commit", **{"job-id": job, "device": top.name, "base-node": base.name, "auto-dismiss": False})
    load_end: float | None = None

    def tick() -> None:
        nonlocal load_end
        if load_end is None and not load.running():
            load_end = tl.now()
            tl.event("load_stopped", method="active")
        for j in q.execute("query-block-jobs"):
            if j.get("device") == job:
                tl.event("job_progress", offset=j.get("offset"), len=j.get("len"))

    wait_event(q, block_job_ready(job), e.commit_timeout_s, tick)
    ready = tl.now()
    switch = stunned(load, lambda: q.execute("job-complete", id=job))
    q.wait_job(job, "concluded", timeout=e.commit_timeout_s)
    e.layers.remove(top)
    q.execute("blockdev-del", **{"node-name": top.name})
    assert e.store
    e.store.free(top.region)
    done = tl.now()
    converged = load_end is None or ready < load_end
    tl.event("delete_done", method="active", converged=converged, seconds=done - t0)
    return {"method": "active", "t_delete_start": t0, "t_ready": ready, "t_done": done, "converged": converged,
            "switch_stun_s": switch,
            "t_load_stopped": load_end, "seconds": done - t0,
            "after_load_s": (done - load_end) if load_end is not None else 0.0}
