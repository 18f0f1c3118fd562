"""Writing a run: staged in the rig's work directory, published into data/ with one rename, never written again.
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import counters as countermod, paths, progress, provenance, registration
from ..errors import SnaptaxError
from ..host import devices
from ..host.rig import Rig
from ..lock import measurement_lock
from ..plan import Measure
from ..profiles import Profile
from ..spindle import EMULATOR_VERSION
from .schema import (
    COUNTERS,
    ENGINE_LOGS,
    FIO_COLUMNS,
    KEYS,
    MANIFEST,
    MEASUREMENT,
    MEASUREMENTS,
    RECORD_FORMAT,
    RECORD_VERSION,
    RESULTS,
    RunPart,
    slug as _slug,
)

if TYPE_CHECKING:
    from .. import fio
    from ..host.procs import CpuTimes


class UncommittedCode(SnaptaxError):
    """The code that measures has uncommitted changes, and measuring from it was not allowed."""


# Measuring from uncommitted code is refused unless this is set to 1 (`--allow-dirty`, `make paper ALLOW_DIRTY=1`;
# make test and the tests set it: their runs go to temporary data directories). Such a run keeps the diff.
ALLOW_DIRTY_ENV = "SNAPTAX_ALLOW_DIRTY"


def dirty_allowed() -> bool:
    return os.environ.get(ALLOW_DIRTY_ENV, "") == "1"


def require_committed_code() -> None:
    """Raise UncommittedCode when the code that measures (provenance.CODE_PATHS) has uncommitted changes and
    measuring from it is not allowed (ALLOW_DIRTY_ENV); the run would otherwise rest on code no commit holds."""
    if dirty_allowed() or not provenance.git_state().get("dirty"):
        return
    files = provenance.uncommitted_code_files()
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    raise UncommittedCode(f"the code that measures has uncommitted changes ({shown or '?'}): commit them first, or "
                          "measure anyway with --allow-dirty (make: ALLOW_DIRTY=1; the run then keeps their diff)")


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that readers see the old content or the whole new content, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=1, sort_keys=True, default=_jsonable) + "\n")


def _jsonable(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, tuple)):
        return list(obj)
    raise TypeError(f"not JSON-serializable: {type(obj).__name__}")


def _write_csv(path: Path, columns: list[str], rows: list[dict]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="raise")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def run_id_now(profile: Profile, part: RunPart | None = None) -> str:
    """A new run's id: the UTC time it starts, its profile and, for a part of a study, the part's name (so that a
    set's runs read as such in data/)."""
    return "-".join([time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), _slug(profile.name),
                     *([_slug(part.name)] if part else [])])


def machine_counters(cpu: CpuTimes | None) -> dict[str, float]:
    """The machine's CPU times as counters (machine.cpu_{busy,idle,steal}_s; none when not sampled)."""
    if cpu is None:
        return {}
    return {"machine.cpu_busy_s": cpu.busy_s, "machine.cpu_idle_s": cpu.idle_s, "machine.cpu_steal_s": cpu.steal_s}


@dataclass
class RunWriter:
    """Writes one run into a staging directory and publishes it with one rename. No lock, no devices: RunSession
    adds those for measuring; tests use a RunWriter directly to make synthetic runs in the same format."""

    rig: Rig
    study: str
    profile: Profile
    parameters: dict[str, Any]          # study parameters (the plan's record's to_json()); read back by its analysis
    staging: Path
    devices_used: tuple[str, ...] = ()  # rig devices this run measures (empty: all of the rig's)
    planned_points: int = 0
    planned_seconds: float = 0.0
    run_id: str = ""
    events: list[dict] = field(default_factory=list)
    variants: dict[str, dict] = field(default_factory=dict)
    variant: str = "default"
    published: Path | None = None
    part: RunPart | None = None         # the part of the study this run measures (None: all of it)

    def __post_init__(self) -> None:
        if not self.run_id:
            self.run_id = run_id_now(self.profile, self.part)
        self.started_utc = provenance.utc_now()
        self.lock_wait_s = 0.0       # a RunSession's wait for the measurement lock, before started_utc
        # the code and tools that measure: taken when a session starts (a commit made while it runs is not its code)
        self.provenance: dict[str, Any] | None = None
        # the uncommitted changes to the code when the session started (provenance.uncommitted_diff); None: none
        self.code_diff: str | None = None
        self._rows: list[dict] = []
        self._counter_rows: list[dict] = []
        self._paths: list[str] = []
        # a writer on its own (tests, tools) is quiet; a measuring RunSession reports progress
        self.progress = progress.Progress(self.study, self.planned_points, self.planned_seconds, quiet=True)

    @contextlib.contextmanager
    def in_variant(self, name: str, description: dict[str, Any]) -> Iterator[None]:
        """Measurements inside belong to one configuration (e.g. a qcow2 L2-cache setting, a drive profile)."""
        self.variants[name] = description
        previous, self.variant = self.variant, name
        try:
            yield
        finally:
            self.variant = previous

    def discard_variant(self, name: str) -> int:
        """Drop everything recorded under variant `name` (rows, counters, measurement directories; its events and
        description stay): a configuration measured again from the start. Returns the measurements dropped."""
        prefix = f"{MEASUREMENTS}/{_slug(name)}/"
        dropped = sum(p.startswith(prefix) for p in self._paths)
        self._paths[:] = [p for p in self._paths if not p.startswith(prefix)]
        self._rows[:] = [r for r in self._rows if r["variant"] != name]
        self._counter_rows[:] = [r for r in self._counter_rows if r["variant"] != name]
        shutil.rmtree(self.variant_dir(name), ignore_errors=True)
        return dropped

    # -------------------------------------------------------------- recording
    def variant_dir(self, variant: str | None = None) -> Path:
        """measurements/<variant>/ in staging (default: the current variant's): its measurements' directories and
        the study's own files of that variant (e.g. a timeline's host_series.csv). RunRecord.variant_dir reads it."""
        return self.staging / MEASUREMENTS / _slug(self.variant if variant is None else variant)

    def engine_logs_dir(self, engine: str) -> Path:
        """engine-logs/<variant>/<engine>/ in staging, created: an engine's own logs for the current variant."""
        d = self.staging / ENGINE_LOGS / _slug(self.variant) / engine
        d.mkdir(parents=True, exist_ok=True)
        return d

    def measurement_dir(self, index: int, step: Measure) -> Path:
        d = self.variant_dir() / f"{index:03d}-{_slug(step.label)}"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def log_event(self, kind: str, **data: Any) -> None:
        self.events.append({"utc": provenance.utc_now(), "variant": self.variant, "event": kind, **data})

    def record_measurement(self, index: int, step: Measure, *, chain_length: int, fio_run: fio.FioRun,
                           counters_before: dict[str, float], counters_after: dict[str, float],
                           extra: dict[str, Any] | None = None) -> None:
        """Record one fio run. Counter names must be in snaptax.counters.CATALOGUE (source.name)."""
        from .. import fio

        counted = countermod.over_measurement({**counters_before, **machine_counters(fio_run.cpu_before)},
                                              {**counters_after, **machine_counters(fio_run.cpu_after)})
        tidy = fio.tidy_rows(fio_run.result)
        rel = str(fio_run.directory.relative_to(self.staging))
        coords = {"variant": self.variant, "index": index, "phase": step.phase, "job": step.job.name,
                  "rw": step.job.rw, "repeat": step.repeat, "chain_length": chain_length}
        record = {**coords, "label": step.label, "bs": step.job.bs, "iodepth": step.job.iodepth,
                  "numjobs": step.job.numjobs, "wall_s": fio_run.wall_s, "fio": tidy,
                  "counters": {n: c.to_json() for n, c in counted.items()}, "extra": extra or {},
                  "recorded_utc": provenance.utc_now()}
        write_json(fio_run.directory / MEASUREMENT, record)
        self._paths.append(rel)
        for row in tidy:
            self._rows.append({**coords, **{k: row[k] for k in FIO_COLUMNS}, "path": rel})
        for c in counted.values():
            self._counter_rows.append({"variant": self.variant, "index": index, "counter": c.name, "kind": c.kind,
                                       "unit": c.unit, "before": c.before, "after": c.after,
                                       "delta": "" if c.delta is None else c.delta})
        self.progress.advance(step.label, fio_run.wall_s)

    # -------------------------------------------------------------- publishing
    def _measured_devices(self) -> list:
        found = [d for d in self.rig.devices if d.name in self.devices_used]
        return found or list(self.rig.devices)

    def _provenance(self) -> dict[str, Any]:
        """The provenance the manifest records; with uncommitted code, its git part names the diff file kept
        beside the manifest (git.uncommitted_diff)."""
        prov = dict(self.provenance or provenance.collect())
        if self.code_diff:
            prov["git"] = {**prov.get("git", {}), "uncommitted_diff": provenance.UNCOMMITTED_DIFF}
        return prov

    def publish(self, final: Path) -> Path:
        """Write results.csv, counters.csv and the manifest, then move the staging directory to `final`."""
        manifest = {
            "format": RECORD_FORMAT, "format_version": RECORD_VERSION,
            "study": self.study, "run_id": self.run_id, "profile": asdict(self.profile),
            "rig": self.rig.name, "rig_kind": self.rig.kind, "rig_file": str(self.rig.source),
            "emulated": any(d.emulated for d in self._measured_devices()),
            "devices": [devices.identity(self.rig, d) for d in self.rig.devices],
            "measured_devices": [d.name for d in self._measured_devices()],
            "parameters": self.parameters, "variants": self.variants, "events": self.events,
            "provenance": self._provenance(), "started_utc": self.started_utc,
            "lock_wait_s": self.lock_wait_s,
            "finished_utc": provenance.utc_now(), "measurements": len(self._paths),
            "planned_points": self.planned_points, "planned_seconds": self.planned_seconds,
            "emulator_version": EMULATOR_VERSION if any(d.emulated for d in self._measured_devices()) else None,
            "registration": registration.recorded(),
            "part": self.part.to_json() if self.part else None,
        }
        self.staging.mkdir(parents=True, exist_ok=True)
        _write_csv(self.staging / RESULTS, [*KEYS, *FIO_COLUMNS, "path"], self._rows)
        _write_csv(self.staging / COUNTERS, ["variant", "index", "counter", "kind", "unit", "before", "after",
                                             "delta"], self._counter_rows)
        if self.code_diff:
            (self.staging / provenance.UNCOMMITTED_DIFF).write_text(self.code_diff)
        write_json(self.staging / MANIFEST, manifest)
        final.parent.mkdir(parents=True, exist_ok=True)
        incoming = final.parent / f".incoming-{self.run_id}"
        shutil.rmtree(incoming, ignore_errors=True)
        try:
            os.rename(self.staging, incoming)
        except OSError:  # staging on another filesystem than data/
            shutil.copytree(self.staging, incoming)
        os.rename(incoming, final)
        self.published = final
        self.progress.done(final)
        return final


class RunSession(RunWriter):
    """One measured study run on one rig: holds the machine-wide measurement lock, stages in the rig's work
    directory, publishes into data/<rig>/<study>/<run-id>/ on success and discards everything on failure.

    planned_points / planned_seconds (from the study's StudyPlan) drive the progress line and its ETA; part: the part
    of the study it measures (None: all of it), recorded in the manifest.
    """

    def __init__(self, rig: Rig, study: str, profile: Profile, parameters: dict[str, Any], *,
                 devices_used: tuple[str, ...] = (), planned_points: int = 0, planned_seconds: float = 0.0,
                 part: RunPart | None = None) -> None:
        run_id = run_id_now(profile, part)
        super().__init__(rig, study, profile, parameters, rig.rig_work_dir / "staging" / study / run_id,
                         devices_used, planned_points, planned_seconds, run_id, part=part)
        self.progress.quiet = False

    def __enter__(self) -> RunSession:
        # Runs hold the machine-wide measurement lock, so any staging directory found now belongs to a run
        # that was killed without a chance to clean up.
        self._lock = measurement_lock(waiting=self.progress.say)
        asked = time.monotonic()
        self._lock.__enter__()
        # The run starts when it holds the lock: a wait behind another measurement is not its measuring time
        # (the README's and the paper's study times are finished_utc − started_utc).
        self.lock_wait_s = round(time.monotonic() - asked, 3)
        self.started_utc = provenance.utc_now()
        self.provenance = provenance.collect()
        try:
            if self.provenance.get("git", {}).get("dirty"):
                require_committed_code()
                self.code_diff = provenance.uncommitted_diff() or None
            if self.staging.parent.exists():
                for stale in self.staging.parent.iterdir():
                    shutil.rmtree(stale, ignore_errors=True)
            self.staging.mkdir(parents=True)
        except BaseException:
            self._lock.__exit__(None, None, None)
            raise
        self.progress.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                final = self.publish(paths.study_dir(self.rig.name, self.study) / self.run_id)
                from .reader import RunRecord

                self.progress.say(RunRecord.load(final).validity_line())
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)
            self._lock.__exit__(None, None, None)
