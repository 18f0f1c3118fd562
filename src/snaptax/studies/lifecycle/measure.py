"""Measure the lifecycle study (needs root): timelines on the emulated raid1_10k with the qcow2 redo log, three
deletion methods under load, and the model grid, in one RunSession.

fio runs as a background process of the engine's ProcessGroup (so a deletion can be driven over QMP while the
load runs, and Ctrl-C stops fio before the daemons it talks to); the emulated array's counters are sampled every
second by a thread that only reads the emulator's counter file (QMP stays in the main thread). Each phase's fio
run is recorded through the session like any measurement (job file, fio JSON, logs, counters), with its start
time on the timeline and fio's per-second IOPS parsed by fiologparser in `extra`; the host series of a timeline
is `measurements/<variant>/host_series.csv`, the deletion's steps are session events.
"""
from __future__ import annotations

import functools
import subprocess
import time
from collections.abc import Callable
from typing import Any

from ... import fio
from ...engines.qcow2 import Qcow2ChainEngine, Qcow2Config, delete_active
from ...errors import ConfigError
from ...host import rig as rigmod
from ...host.qmp import block_job_ready
from ...host.qsd import DeviceRegion
from ...host.rig import Device, Rig
from ...profiles import Profile
from ...record import RunSession
from ...timeline import HostSampler, Load, Timeline, attempt, job_text, stunned, wait_event
from .. import standin_settings
from ..contract import Setup, whole_study
from . import plan as planmod

HOST_KEYS = ("host.reads", "host.writes", "host.member0.reads", "host.member0.writes", "host.member1.reads",
             "host.member1.writes", "host.bytes_read", "host.bytes_written")


COMMIT_TIMEOUT_S = 90.0     # a commit or mirror job of these sizes takes seconds; longer means the daemon hung


class LifecycleEngine(Qcow2ChainEngine):
    """The qcow2 chain engine with what the deletion methods need: per-layer allocated size, a write-blocking
    mirror of the active layer onto the base, and a stunned (guest-stopped) final commit. Its commit and mirror
    jobs time out after COMMIT_TIMEOUT_S by default, so a daemon hang (plan.HANG_NOTE) ends in a retry wherever
    the engine is used (the study's timelines and the tests alike), not after the base engine's 30 minutes."""

    empty_bytes: float = 0.0     # allocated size of an empty overlay (header, L1 and refcount tables)

    def __init__(self, rig: Rig, device: Device, config: Qcow2Config, disk_size: int,
                 commit_timeout_s: float = COMMIT_TIMEOUT_S):
        super().__init__(rig, device, config, disk_size, commit_timeout_s=commit_timeout_s)

    def __enter__(self) -> LifecycleEngine:
        super().__enter__()
        return self

    def commit_oldest(self, stun: Callable[[Callable[[], None]], float]) -> float:
        """Commit the oldest delta into the base (intermediate block-commit) while the guest writes on; the graph
        change at the end (job-finalize) runs inside `stun`. Returns the stun time (s)."""
        assert self.daemon and self.store and self.daemon.qmp and self.chain_length >= 2
        q = self.daemon.qmp
        top, base = self.layers[1], self.layers[0]
        self._serial += 1
        job = f"commit{self._serial}"
        q.execute("block-commit", **{"job-id": job, "device": self.layers[-1].name, "top-node": top.name,
                                     "base-node": base.name, "auto-finalize": False, "auto-dismiss": False})
        q.wait_job(job, "pending", timeout=self.commit_timeout_s)
        stunned = stun(lambda: q.execute("job-finalize", id=job))
        q.wait_job(job, "concluded", timeout=self.commit_timeout_s)
        self.layers.remove(top)
        q.execute("blockdev-del", **{"node-name": top.name})
        self.store.free(top.region)
        return stunned

    def mirror_onto_base(self, timeout_s: float, on_wait: Callable[[], None],
                         stun: Callable[[Callable[[], None]], float]) -> dict[str, float]:
        """Delete the (only) snapshot by blockdev-mirror of the active layer onto the base in
        copy-mode=write-blocking, sync=top: the top layer's clusters are copied into the base's bytes (reached
        through a second raw node on the base region) while every guest write goes to both synchronously; at READY
        the job completes and the export follows the target. Returns the times (s since start) of ready and done."""
        assert self.daemon and self.store and self.daemon.qmp and self.chain_length == 1
        q = self.daemon.qmp
        base, top = self.layers[0], self.layers[1]
        self._serial += 1
        tag = f"mirrorbase{self._serial}"
        proto, node = f"dev-{tag}", f"reg-{tag}"
        q.execute("blockdev-add", **{"node-name": proto, **self.store.protocol})
        q.execute("blockdev-add", driver="raw", **{"node-name": node}, file=proto, offset=base.region.offset,
                  size=base.region.size)
        job = f"mirror{self._serial}"
        t0 = time.monotonic()
        q.execute("blockdev-mirror", **{"job-id": job, "device": top.name, "target": node, "sync": "top",
                                        "copy-mode": "write-blocking", "auto-dismiss": False})
        wait_event(q, block_job_ready(job), timeout_s, on_wait)
        ready = time.monotonic() - t0
        stunned = stun(lambda: q.execute("job-complete", id=job))
        q.wait_job(job, "concluded", timeout=timeout_s)
        done = time.monotonic() - t0
        # the old chain (top over the old base node) has no users now: drop it, the alias becomes the base
        q.execute("blockdev-del", **{"node-name": top.name})
        self.store.free(top.region)
        self.store.free(base.region)
        alias = DeviceRegion(base.region.index, base.region.offset, base.region.size, proto, node)
        self.store.regions[node] = alias
        self.layers[:] = [type(base)(node, alias)]
        return {"ready_s": ready, "done_s": done, "switch_stun_s": stunned}


def _work_text(w: planmod.Workload) -> Callable[[fio.FioTarget, str], str]:
    return w.job_file


# ------------------------------------------------------------------ deletion methods

def delete_iterative(tl: Timeline[LifecycleEngine], load: Load, s: planmod.LifecycleScale) -> dict[str, Any]:
    """VMware's deletion before vSphere 6.0: helper snapshot, commit the older delta into the base (an
    intermediate block-commit) while the guest writes into the helper; repeat while the helper's data exceeds the
    threshold, at most max_iterations times; the final commit (active commit of the helper) runs with the guest
    stopped (its fio processes SIGSTOPped: the stun). If after the last iteration the helper is above the
    threshold and its predicted commit time exceeds maxConsolidateTime, the deletion did not converge: wait for
    the load to stop, then commit (timed)."""
    e = tl.engine
    t0 = tl.now()
    empty = getattr(e, "empty_bytes", 0.0)
    d0 = e.layer_bytes(1) - empty
    tl.event("delete_start", method="iterative", delta_bytes=d0)
    iterations: list[dict[str, Any]] = []
    rate_bps = 0.0
    committed_data = d0
    while True:
        ts = tl.now()
        snap_stun = stunned(load, e.take_snapshot)
        tl.event("helper_snapshot", stun_s=snap_stun)
        snap_stun += e.commit_oldest(lambda op: stunned(load, op))   # the older delta into the base
        te = tl.now()
        helper = max(e.layer_bytes(1) - empty, 0.0)
        rate_bps = committed_data / max(te - ts, 1e-6)
        iterations.append({"k": len(iterations), "t_start": ts, "t_end": te, "committed_bytes": committed_data,
                           "helper_bytes": helper, "seconds": te - ts, "snapshot_stun_s": snap_stun})
        tl.event("iteration", **iterations[-1])
        committed_data = helper
        if helper <= s.helper_threshold_bytes or len(iterations) >= s.max_iterations or not load.running():
            break
    predicted_stun = committed_data / rate_bps if rate_bps else 0.0
    converged = load.running() and (committed_data <= s.helper_threshold_bytes or predicted_stun <= s.max_consolidate_s)
    stun = after = 0.0
    load_end = None
    if converged:
        ts = tl.now()
        load.stop_guest()
        try:
            e.delete_snapshot("newest")
        finally:
            load.resume_guest()
        stun = tl.now() - ts
        tl.event("stun", seconds=stun, helper_bytes=committed_data)
    else:
        tl.event("not_converged", iterations=len(iterations), helper_bytes=committed_data,
                 predicted_stun_s=predicted_stun)
        while load.running():
            time.sleep(0.1)
        load_end = tl.now()
        tl.event("load_stopped", method="iterative")
        e.delete_snapshot("newest")
        after = tl.now() - load_end
    done = tl.now()
    tl.event("delete_done", method="iterative", converged=converged, seconds=done - t0)
    return {"method": "iterative", "t_delete_start": t0, "t_done": done, "converged": bool(converged),
            "iterations": iterations, "stun_s": stun, "after_load_s": after, "t_load_stopped": load_end,
            "seconds": done - t0, "delta0_bytes": d0, "empty_helper_bytes": empty,
            "threshold_bytes": s.helper_threshold_bytes, "max_iterations": s.max_iterations,
            "max_consolidate_s": s.max_consolidate_s, "predicted_stun_s": predicted_stun}


def delete_mirror(tl: Timeline[LifecycleEngine], load: Load) -> dict[str, Any]:
    e = tl.engine
    t0 = tl.now()
    tl.event("delete_start", method="mirror", delta_bytes=e.layer_bytes(1))
    times = e.mirror_onto_base(e.commit_timeout_s, lambda: None, lambda op: stunned(load, op))
    done = tl.now()
    tl.event("delete_done", method="mirror", converged=True, seconds=done - t0)
    return {"method": "mirror", "t_delete_start": t0, "t_ready": t0 + times["ready_s"], "t_done": done,
            "converged": True, "seconds": done - t0, "after_load_s": 0.0, "t_load_stopped": None,
            "switch_stun_s": times["switch_stun_s"]}


# ------------------------------------------------------------------ the study

def spindle_device(rig: rigmod.Rig, device: str | None = None) -> rigmod.Device:
    if device:
        return rig.device(device)
    named = [d for d in rig.devices if d.emulated and d.spindle.get("device") == planmod.SPINDLE]
    hdd = [d for d in rig.devices if d.medium == "hdd"]
    if not (named or hdd):
        raise ConfigError(rig.source, "devices", f"no {planmod.SPINDLE} and no hdd device for the lifecycle study")
    return (named or hdd)[0]


def timeline(session: RunSession, engine: LifecycleEngine, s: planmod.LifecycleScale, load_name: str,
             method: str) -> None:
    tl = Timeline[LifecycleEngine](session, engine, session.variant)
    fill = planmod.fill_job(s, "fill")
    with HostSampler(engine._host_counters, tl.t0, HOST_KEYS) as sampler:
        tl.run(job_text(fill), fill, "create")
        w = planmod.workload(s, load_name, s.steady_for(load_name), f"iometer-{load_name}")
        tl.run(_work_text(w), w.summary_job(), "before")
        tl.event("snapshot", name=engine.take_snapshot())
        engine.empty_bytes = engine.layer_bytes(1)      # the empty image (header, tables), no load running
        tl.run(job_text(fill), fill, "refill")
        tl.run(_work_text(w), w.summary_job(), "with")
        wd = planmod.workload(s, load_name, s.delete_window_s, f"iometer-{load_name}")
        load = tl.start(_work_text(wd), wd.summary_job(), "delete")
        time.sleep(1.0)
        if method == "active":
            info = delete_active(tl, load)
        elif method == "iterative":
            info = delete_iterative(tl, load, s)
        else:
            info = delete_mirror(tl, load)
        tl.finish(load, {"deletion": info})
        tl.run(_work_text(w), w.summary_job(), "after")
    sampler.write(session.variant_dir() / "host_series.csv")


def grid(session: RunSession, engine: LifecycleEngine, s: planmod.LifecycleScale) -> None:
    """The model grid: per writer rate, a fresh full delta deleted iteratively beside that load."""
    tl = Timeline[LifecycleEngine](session, engine, session.variant)
    fill = planmod.fill_job(s, "fill")
    with HostSampler(engine._host_counters, tl.t0, HOST_KEYS) as sampler:
        tl.run(job_text(fill), fill, "create")
        for r in s.grid_rates:
            tl.event("snapshot", name=engine.take_snapshot(), rate_iops=r)
            engine.empty_bytes = engine.layer_bytes(1)
            tl.run(job_text(fill), fill.replace(name=f"fill-rate{r}"), "refill")
            w = planmod.grid_workload(s, r)
            load = tl.start(_work_text(w), w.summary_job(), "delete")
            time.sleep(1.0)
            info = delete_iterative(tl, load, s)
            tl.finish(load, {"deletion": info, "rate_iops": r})
    sampler.write(session.variant_dir() / "host_series.csv")


def apart(session: RunSession, engine: LifecycleEngine, s: planmod.LifecycleScale) -> None:
    """The consolidation model's parameters measured apart from every deletion (plan.HELDOUT_APART), repeated
    s.apart_repeats times, each repeat on fresh overlays:
      empty_commit   a helper snapshot and the commit of the older, empty overlay beside the reader alone (t0);
      refill         the test files written again into the helper: it fills in order, as a deletion's delta;
      delta_commit   a helper snapshot and the commit of that overlay beside the reader alone (c0);
      writer_alone   the writer at its saturated rate beside the 25-ms reader, into the fresh helper (r_max; its
                     growth against the writes it made checks the write-pattern growth);
      helper_commit  a helper snapshot and the commit of the overlay the writer filled, beside the reader alone
                     (c_helper: a helper's layout, clusters allocated in the order random writes reached them).
    Each commit is an iteration of delete_iterative's kind (helper, commit_oldest, the stun around the graph
    change), timed the same way; the helper left over is committed unloaded and untimed."""
    tl = Timeline[LifecycleEngine](session, engine, session.variant)
    fill = planmod.fill_job(s, "fill")

    def commit(phase: str, repeat: int, window_s: float) -> None:
        w = planmod.reader_alone(s, window_s)
        load = tl.start(_work_text(w), w.summary_job(), phase, repeat)
        time.sleep(1.0)
        empty = engine.empty_bytes
        committed = max(engine.layer_bytes(1) - empty, 0.0)
        ts = tl.now()
        snap_stun = stunned(load, engine.take_snapshot)
        snap_stun += engine.commit_oldest(lambda op: stunned(load, op))
        te = tl.now()
        step = {"step": phase, "repeat": repeat, "committed_bytes": committed, "seconds": te - ts,
                "snapshot_stun_s": snap_stun, "reader_running": load.running()}
        tl.event("apart", **step)
        tl.finish(load, {"apart": step})

    with HostSampler(engine._host_counters, tl.t0, HOST_KEYS) as sampler:
        tl.run(job_text(fill), fill, "create")
        for i in range(s.apart_repeats or 0):
            tl.event("snapshot", name=engine.take_snapshot(), repeat=i)
            engine.empty_bytes = engine.layer_bytes(1)
            commit("empty_commit", i, s.steady_s)     # the chain is base + an empty helper now
            engine.empty_bytes = engine.layer_bytes(1)
            tl.run(job_text(fill), fill.replace(name=f"fill-apart{i}"), "refill")
            commit("delta_commit", i, s.steady_s)
            engine.empty_bytes = engine.layer_bytes(1)
            w = planmod.writer_alone(s)
            load = tl.start(_work_text(w), w.summary_job(), "writer_alone", i)
            try:                                      # the growth is read once fio has ended; finish checks how
                load.child.proc.wait(timeout=s.steady_s + COMMIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass                                  # finish raises: a request is stuck (plan.HANG_NOTE)
            grown = max(engine.layer_bytes(1) - engine.empty_bytes, 0.0)
            tl.finish(load, {"apart": {"step": "writer_alone", "repeat": i, "grown_bytes": grown}})
            commit("helper_commit", i, s.delete_window_s)
            engine.delete_snapshot("newest")          # the empty helper the last commit left: unloaded, untimed
    sampler.write(session.variant_dir() / "host_series.csv")


def setup(rig: Rig, profile: Profile, device: str | None = None, part: str | None = None) -> Setup:
    """Every timeline and the model grid on the rig's raid1_10k (or `device`)."""
    whole_study("lifecycle", part)
    dev = spindle_device(rig, device)
    s = planmod.scale(profile)
    coverage, used = standin_settings.coverage(rig.name, planmod.STAND_IN, s.disk_bytes, planmod.PRESET_COVERAGE)
    cfg = planmod.qcow2_config(s, coverage)

    def measure(session: RunSession) -> None:
        for load_name, method in planmod.variants():
            name = planmod.variant_name(load_name, method)
            attempt(session, name, functools.partial(timeline, s=s, load_name=load_name, method=method),
                    lambda: LifecycleEngine(rig, dev, cfg, s.disk_bytes),
                    {"load": load_name, "method": method, "device": dev.name, "emulated": dev.emulated})
        attempt(session, planmod.GRID, functools.partial(grid, s=s),
                lambda: LifecycleEngine(rig, dev, cfg, s.disk_bytes),
                {"method": "iterative", "rates": list(s.grid_rates), "device": dev.name})
        if s.apart_repeats:
            attempt(session, planmod.APART, functools.partial(apart, s=s),
                    lambda: LifecycleEngine(rig, dev, cfg, s.disk_bytes),
                    {"method": "apart", "repeats": s.apart_repeats, "device": dev.name})
    params = planmod.parameters(s, dev.name, dev.capacity, coverage, (used,) if used else ())
    return Setup(params, (dev.name,), planmod.planned_points(s), planmod.planned_seconds(profile), measure)


__all__ = ["LifecycleEngine", "HostSampler", "Timeline", "delete_active", "delete_iterative", "delete_mirror",
           "spindle_device", "timeline", "grid", "apart", "setup"]
