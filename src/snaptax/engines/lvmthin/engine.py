"""The LVM thin engine: a thin pool on one rig device, whole plans executed natively or in the TCG guest."""
from __future__ import annotations

import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ... import fio, paths
from ...errors import ConfigError, EngineError
from ...fio import FioRun, FioTarget
from ...guest.vm import GuestConfig, GuestDisk, GuestStalled, run_guest
from ...host.procs import ProcessGroup
from ...host.rig import Device, Rig
from ...lock import measurement_lock
from ...plan import Gate, Measure, Plan, require_gate
from ..base import SnapshotEngine
from .config import EXTENT, VG, LvmThinConfig, MiB, round_up
from .counters import chunks_broken, parse_counters
from .script import CompiledPlan, ScriptRun, compile_plan, gate_decider, run_script


def host_has_device_mapper(proc_devices: Path = Path("/proc/devices")) -> bool:
    """True if the running kernel has device-mapper (so dm-thin can be loaded natively)."""
    try:
        return any(line.split()[-1:] == ["device-mapper"] for line in proc_devices.read_text().splitlines())
    except OSError:
        return False




class LvmThinEngine(SnapshotEngine):
    """A thin volume of `disk_size` bytes in a thin pool on one rig device; runs whole plans (execute)."""

    kind = "lvmthin"

    def __init__(self, rig: Rig, device: Device, config: LvmThinConfig, disk_size: int):
        if disk_size % MiB:
            raise ConfigError(rig.source, "disk_size", f"{disk_size} is not a multiple of 1 MiB")
        self.pv_size = round_up(int(disk_size * config.pool_factor) + 2 * _metadata_guess(disk_size, config)
                                 + (disk_size if config.control_volume else 0) + 64 * MiB, EXTENT)
        if self.pv_size > device.capacity:
            raise ConfigError(rig.source, f"devices.{device.name}.capacity",
                              f"smaller than the thin pool's physical volume ({self.pv_size} bytes for a "
                              f"{disk_size}-byte volume at pool_factor {config.pool_factor})")
        self.rig, self.device, self.config, self.disk_size = rig, device, config, disk_size
        self.group = ProcessGroup()
        self.native = self._choose_native()
        self._chain = 0
        self._shares_broken = 0.0
        self.last_run: dict[str, Any] = {}
        # {TAG: host monotonic s} of the script's `snaptax-step TAG` lines in the last run (the guest's console, or
        # natively its output): where each step falls among host-side samples (per-tier counters of an emulated
        # pool), with no guest-clock mapping.
        self.host_step_times: dict[str, float] = {}

    def _choose_native(self) -> bool:
        has_dm = host_has_device_mapper()
        if self.config.mode == "native" and not has_dm:
            raise EngineError("lvmthin mode 'native': this kernel has no device-mapper (/proc/devices); "
                              "use mode 'guest' or 'auto'")
        return self.config.mode == "native" or (self.config.mode == "auto" and has_dm)

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> LvmThinEngine:
        from ...host.backends import open_device
        from ...host.qsd import RegionStore, StorageDaemon
        try:
            tag = f"lvmthin-{self.config.name}"
            self.run_dir = paths.engine_run_dir(self.rig.rig_work_dir, tag)
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.group.own(self.run_dir)
            backend = open_device(self.rig, self.device, self.group, tag=tag)
            self._host_counters = backend.host_counters
            self._backend = backend
            if not self.native:
                # Built (or found in the machine-wide cache) before any measurement starts; shared by all rigs,
                # since the image does not depend on the rig.
                from ...guest.image import build_image
                self.image = build_image()
                # The PV is a region of the rig device, exported over NBD to the guest's virtio disk "pv0".
                self.daemon = StorageDaemon(self.group, self.run_dir / "qsd").start()
                store = RegionStore(self.daemon, backend.protocol(), self.device.capacity)
                region = store.allocate(self.pv_size, "pv0")
                self.disks = [GuestDisk("pv0", self.daemon.export(region.node, "pv0"))]
        except BaseException:
            self.group.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        daemon = getattr(self, "daemon", None)
        if daemon is not None and daemon.qmp:
            daemon.qmp.close()
        self.group.close()

    # ------------------------------------------------------------ interface
    @property
    def chain_length(self) -> int:
        return self._chain

    def fio_target(self) -> FioTarget:
        raise EngineError("lvmthin runs fio next to dm-thin (in the guest or on the host); use execute(plan)")

    def take_snapshot(self) -> str:
        raise EngineError("lvmthin executes whole plans (execute); single steps are not driven from the host")

    def delete_snapshot(self, which: str = "newest") -> str:
        raise EngineError("lvmthin executes whole plans (execute); single steps are not driven from the host")

    def counters(self) -> dict[str, float]:
        """Host-level counters of the rig device (below the guest and qemu-storage-daemon)."""
        return self._host_counters()

    def describe(self) -> dict[str, Any]:
        d = {"engine": self.kind, "config": asdict(self.config), "disk_size": self.disk_size,
             "pv_size": self.pv_size, "device": self.device.name,
             "where": "native" if self.native else "tcg-guest"}
        image = getattr(self, "image", None)
        if image is not None:
            d["guest_image"] = {k: image.provenance[k] for k in
                                ("key", "kernel_package", "kernel_version", "kernel_release", "kernel_deb_sha256",
                                 "tool_versions", "initrd_bytes")}
        return d

    # ------------------------------------------------------------ execution
    def run_plan(self, plan: Plan, out_dir: Path, gate: Gate | None = None) -> tuple[CompiledPlan, Path]:
        """Compile and run `plan`; its raw results land in out_dir (m<index>/..., steps.txt, script.log). `gate`
        answers the script's questions about gated steps while it runs (guest.vm.GateAnswers)."""
        require_gate(plan, gate)
        serials = ["pv0"]
        compiled = compile_plan(plan, self.config, self.disk_size, serials)
        if self.config.integrity:
            volumes = plan.max_chain_length + 1
            if not self.native and volumes * self.disk_size * 2 > self.config.guest.memory_mib * MiB:
                raise ConfigError("lvmthin", "integrity", f"{volumes} reference copies of {self.disk_size} bytes "
                                  f"do not fit in half the guest's {self.config.guest.memory_mib} MiB")
        timeout = max(self.config.guest.run_timeout_s, plan.fio_seconds() * 3 + 600)
        stall = stall_limit(plan, self.disk_size)
        decide = gate_decider(plan, gate) if gate is not None else None
        with measurement_lock():
            host_before = self._host_counters()
            t0 = time.monotonic()
            if self.native:
                native = self._run_native(compiled, out_dir, timeout, decide)
                self.host_step_times = native.step_times
                (out_dir / "host_steps.txt").write_text(
                    "".join(f"{tag} {t - native.t0:.3f}\n" for tag, t in native.step_times.items()))
            else:
                image = self.image
                gcfg = _replace(self.config.guest, run_timeout_s=timeout, stall_timeout_s=stall)
                run = run_guest(image, self.disks, compiled.script, out_dir, files=compiled.files, config=gcfg,
                                run_dir=self.run_dir / "guest", pg=self.group, gate=decide)
                self.last_run = {"guest_image_key": image.key, "boot_to_ready_s": run.boot_to_ready_s,
                                 "guest_wall_s": run.wall_s}
                self.host_step_times = run.step_times
                (out_dir / "host_steps.txt").write_text(
                    "".join(f"{tag} {t - run.t0:.3f}\n" for tag, t in run.step_times.items()))
            wall = time.monotonic() - t0
            host_after = self._host_counters()
        self.last_run.update(wall_s=wall, host_counters_before=host_before, host_counters_after=host_after)
        return compiled, out_dir

    def _run_native(self, compiled: CompiledPlan, out_dir: Path, timeout: float,
                    decide: Callable[[str, str], bool | None] | None) -> ScriptRun:
        """The same script on the host: lvm reads our lvm.conf (filter: only the rig device) via LVM_SYSTEM_DIR."""
        import subprocess

        from ...host.procs import run
        pv = self._backend.path
        if pv is None:
            raise EngineError("lvmthin native mode needs a block device (a file rig device's loop or a real disk)")
        sysdir = self.run_dir / "lvm"
        sysdir.mkdir(parents=True, exist_ok=True)
        conf = (paths.GUEST_DIR / "lvm.conf").read_text()
        conf = conf.replace('"a|^/dev/vd[a-z]+$|"', f'"a|^{pv}$|"')
        (sysdir / "lvm.conf").write_text(conf)
        in_dir = self.run_dir / "in"
        for rel, data in {**compiled.files, "run.sh": compiled.script.encode()}.items():
            (in_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (in_dir / rel).write_bytes(data)
        lib = self.run_dir / "lib.sh"
        lib.write_text((paths.GUEST_DIR / "lib.sh").read_text() +
                       f'disk() {{ [ "$1" = pv0 ] && echo {shlex.quote(str(pv))}; }}\n')
        out_dir.mkdir(parents=True, exist_ok=True)
        for mod in ("dm_thin_pool", "dm_snapshot"):
            run(["modprobe", mod], check=False)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LVM_SYSTEM_DIR": str(sysdir), "IN": str(in_dir),
               "OUT": str(out_dir), "SNAPTAX_LIB": str(lib)}
        try:
            ran = run_script(in_dir, env, out_dir / "script.log", timeout, decide)
        finally:
            # A failed or interrupted script leaves the VG active on the rig device; deactivate it so the
            # device (a loop device, say) can be released.
            subprocess.run(["lvm", "vgchange", "-q", "-an", VG], env=env, capture_output=True, timeout=120)
        if ran.rc != 0:
            tail = "\n".join((out_dir / "script.log").read_text(errors="replace").splitlines()[-20:])
            raise EngineError(f"lvmthin native script exited {ran.rc}; log tail:\n{tail}")
        return ran

    def execute(self, plan: Plan, session, clock_t0: float | None = None, *, gate: Gate | None = None) -> None:
        """Run the whole plan at once (guest or native) and record each Measure into `session`; `gate` decides the
        gated Measures as the script reaches them (plan.Measure.gate), and those it skipped are not recorded.

        clock_t0 (host monotonic s): put the run on a timeline's clock, as snaptax.timeline does for host-side
        engines: each measurement's extra gets t_start_s/t_end_s and fio's per-second IOPS (vm_series), each
        snapshot/delete event its t_s, from the host's stamps of the script's step lines (host_step_times; in the
        guest its console's, natively its output's), so they can be set against counters sampled on the host
        (timeline.HostSampler)."""
        raw = self.run_dir / "results"
        shutil.rmtree(raw, ignore_errors=True)
        compiled, out = self.run_plan(plan, raw, gate)
        # Step times come from the script's clock (/proc/uptime, 10 ms resolution; in the guest its TCG clock).
        # A Measure's wall_s is the whole fio process, including fio's start-up (about 1 s under TCG, where the
        # dynamic loader relocates fio's ~80 MB of libraries); fio's own runtime is in its JSON.
        steps = _parse_steps(out / "steps.txt")
        # The guest's own logs travel with the run (why a number is what it is may be in dmesg).
        logs = session.engine_logs_dir(self.kind)
        for name in ("script.log", "steps.txt", "host_steps.txt", "integrity.txt", "dmesg.txt"):
            if (out / name).exists():
                shutil.copy2(out / name, logs / name)
        console = self.run_dir / "guest" / "console.log"
        if console.exists():
            shutil.copy2(console, logs / "console.log")
        session.log_event("lvmthin_setup", seconds=_span(steps, "setup"), chunk_size=self.config.chunk_size,
                          zeroing=self.config.zeroing, chain=self.config.chain)
        host = self.host_step_times if clock_t0 is not None else {}
        for ev in compiled.events:
            tag = f"{ev['index']:03d}-{ev['event'] if ev['event'] == 'delete' else 'snapshot'}"
            seconds = _span(steps, tag)
            at = {"t_s": round(host[f"{tag}-begin"] - clock_t0, 3)} \
                if clock_t0 is not None and f"{tag}-begin" in host else {}
            session.log_event(ev["event"], name=ev["name"], chain_length=ev["chain_length"], seconds=seconds,
                              **at, **({"which": ev["which"]} if "which" in ev else {"source": ev["source"]}))
        for index, (step, chain, volume) in sorted(compiled.measures.items()):
            src = out / f"m{index:03d}"
            if step.gate is not None and not src.exists():
                continue     # the host closed its gate: the script skipped it
            directory = session.measurement_dir(index, step)
            for f in src.iterdir():
                shutil.copy2(f, directory / f.name)
            result = fio.read_result(directory, f"measurement {index}")
            before = parse_counters((src / "counters_before.txt").read_text(), self.config.chunk_size)
            after = parse_counters((src / "counters_after.txt").read_text(), self.config.chunk_size)
            broken, provisioned = chunks_broken(before, after, self.config.chunk_size)
            # A counter kept across the plan, so that its difference over a measurement is that measurement's count.
            before["engine.chunks_broken"] = self._shares_broken
            self._shares_broken += broken
            after["engine.chunks_broken"] = self._shares_broken
            self._chain = chain
            end = host.get(f"{index:03d}-fio-end")
            timed = _on_clock(directory, result, end - clock_t0) if clock_t0 is not None and end is not None else {}
            session.record_measurement(index, step, chain_length=chain,
                                       fio_run=FioRun(directory, result, _span(steps, f"{index:03d}-fio")),
                                       counters_before=before, counters_after=after,
                                       extra={"engine": self.kind, "volume": volume,
                                              "chunks_newly_provisioned": provisioned,
                                              "where": "native" if self.native else "tcg-guest", **timed})
        self._chain = compiled.final_chain_length
        session.log_event("lvmthin_run", **self.last_run)


def _on_clock(directory: Path, result: dict, t_end_s: float) -> dict[str, Any]:
    """A guest measurement placed on a host timeline: it ended when the host saw its fio-end step line (t_end_s)
    and started fio's runtime before (the step line before fio is printed ~1 s before fio's job starts under TCG,
    so the end is the better anchor); fio's per-second IOPS (all directions, fiologparser) as timeline.Load
    records them."""
    from ...timeline import vm_series
    runtime = max((float(j.get("job_runtime", j.get("read", {}).get("runtime", 0))) for j in result.get("jobs", [])),
                  default=0.0) / 1e3
    return {"t_start_s": round(t_end_s - runtime, 3), "t_end_s": round(t_end_s, 3),
            "vm_series": vm_series(directory, result)}


# The slowest rate a size-based job (a prefill) may run at in the TCG guest before it counts as stalled: the guest
# prefilled 1 GiB in 1.6 s (flat LV) to 5.5 s (thin volume) on the 2-core build machine (quick run of
# 2026-11-25T15:34); an eleventh of the slower rate still passes.
_SLOWEST_FILL_BYTES_S = 16 * MiB
_STALL_FLOOR_S = 240.0


def stall_limit(plan: Plan, disk_size: int) -> float:
    """Seconds the guest's console may stay silent: twice the longest step of the plan (a time-based fio run's
    runtime and ramp, or a size-based one's bytes at _SLOWEST_FILL_BYTES_S, plus a whole-volume integrity check at
    that rate), at least _STALL_FLOOR_S. Every step prints a line (the script's `step`), so silence beyond this is a
    hang, not a slow step."""
    longest = disk_size / _SLOWEST_FILL_BYTES_S
    for step in plan.steps:
        if isinstance(step, Measure):
            job = step.job
            longest = max(longest, (job.runtime_s or 0) + (job.ramp_time_s or 0) if job.time_based
                          else job.size / _SLOWEST_FILL_BYTES_S)
    return max(_STALL_FLOOR_S, 2 * longest)


STALL_ATTEMPTS = 2


def execute_variant(rig: Rig, device: Device, config: LvmThinConfig, disk_size: int, variant: str, plan: Plan,
                    session, description: dict[str, Any] | None = None,
                    body: Callable[[LvmThinEngine], None] | None = None) -> None:
    """`plan` as variant `variant` of `session` on a fresh engine; when the guest stalls (GuestStalled: nothing was
    recorded), once more on a fresh engine — new daemon, new guest, the physical volume re-created — with the
    stall logged in the run (event 'guest_stalled'). A second stall raises. description: added to the engine's
    in the variant's record; body: what runs the plan on the entered engine (default: engine.execute(plan))."""
    for attempt in range(1, STALL_ATTEMPTS + 1):
        try:
            with LvmThinEngine(rig, device, config, disk_size) as engine:
                with session.in_variant(variant, {**engine.describe(), **(description or {})}):
                    if body is None:
                        engine.execute(plan, session)
                    else:
                        body(engine)
            return
        except GuestStalled as exc:
            session.log_event("guest_stalled", variant=variant, attempt=attempt, of=STALL_ATTEMPTS,
                              message=str(exc)[-3000:], processes=exc.processes[-6000:])
            if attempt == STALL_ATTEMPTS:
                # nothing is published: the report is the only trace of what the processes were doing
                raise GuestStalled(f"{exc}\nprocesses when the stall was declared:\n{exc.processes}",
                                   exc.processes) from exc


def _metadata_guess(disk_size: int, config: LvmThinConfig) -> int:
    if config.metadata_size:
        return config.metadata_size
    # lvm's default: 64 bytes per chunk of the pool, at least 2 MiB (rounded generously here; only sizes the PV).
    return max(4 * MiB, round_up(int(disk_size * config.pool_factor) // config.chunk_size * 64 * 2, MiB))


def _replace(cfg: GuestConfig, **changes) -> GuestConfig:
    import dataclasses
    return dataclasses.replace(cfg, **changes)


def _parse_steps(path: Path) -> dict[str, float]:
    """steps.txt ('TAG-begin|end ... UPTIME' lines) -> {'TAG-begin': t, 'TAG-end': t}."""
    marks: dict[str, float] = {}
    if not path.exists():
        return marks
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2:
            marks[parts[0]] = float(parts[-1])
    return marks


def _span(marks: dict[str, float], tag: str) -> float:
    b, e = marks.get(f"{tag}-begin"), marks.get(f"{tag}-end")
    return (e - b) if b is not None and e is not None else float("nan")


def read_integrity(out_dir: Path) -> list[tuple[str, str, str, str, str]]:
    """integrity.txt -> (status 'ok'|'MISMATCH', step, volume, 'md5'|'bytes', expected md5) rows."""
    path = out_dir / "integrity.txt"
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            p = line.split()
            if len(p) == 5:
                rows.append((p[0], p[1], p[2], p[3], p[4]))
    return rows
