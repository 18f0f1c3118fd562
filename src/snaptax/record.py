"""Run records: everything one study run measured, written so that data/ never holds half a run.

A run is assembled in the rig's work directory (staging) and moved into
    data/<rig>/<study>/<run-id>/
only after its last measurement and its manifest are written. A failed or interrupted run removes its staging
directory; nothing of it reaches data/. Layout of a published run:
    manifest.json                      provenance, parameters, variants, events, completion time
    results.csv                        one tidy row per measurement and direction
    measurements/<variant>/<NNN>-<label>/
        job.fio fio.json fio_*.log     exactly what fio read and wrote
        measurement.json               step, chain length, fio summary, host counters before/after/delta
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import time
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, Iterator

from . import devices, fio, paths, provenance
from .lock import measurement_lock
from .plan import Measure
from .rig import Rig

MANIFEST = "manifest.json"
RESULTS = "results.csv"


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
    if is_dataclass(obj):
        return asdict(obj)
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, tuple)):
        return list(obj)
    raise TypeError(f"not JSON-serializable: {type(obj).__name__}")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def counter_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0) for k in after if isinstance(after[k], (int, float))}


@dataclass
class RunSession:
    """One study run on one rig: a context manager that publishes on success and discards on failure."""

    rig: Rig
    study: str
    profile: str
    parameters: dict[str, Any]
    devices_used: tuple[str, ...] = ()   # rig devices this run measures (empty: all of the rig's)
    run_id: str = ""
    rows: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    variants: dict[str, dict] = field(default_factory=dict)
    variant: str = "default"
    published: Path | None = None

    def __post_init__(self) -> None:
        if not self.run_id:
            self.run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{_slug(self.profile)}"
        self.staging = self.rig.rig_work_dir / "staging" / self.study / self.run_id
        self.started_utc = provenance.utc_now()

    # -------------------------------------------------------------- lifecycle
    def __enter__(self) -> "RunSession":
        # Runs hold the machine-wide measurement lock, so any staging directory found now belongs to a run
        # that was killed without a chance to clean up.
        self._lock = measurement_lock()
        self._lock.__enter__()
        if self.staging.parent.exists():
            for stale in self.staging.parent.iterdir():
                shutil.rmtree(stale, ignore_errors=True)
        from .backends import detach_stale_loops  # under the lock: no other run can own them
        detach_stale_loops(self.rig.work_dir)
        self.staging.mkdir(parents=True)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self._publish()
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)
            self._lock.__exit__(None, None, None)

    @contextlib.contextmanager
    def in_variant(self, name: str, description: dict[str, Any]) -> Iterator[None]:
        """Measurements inside belong to one engine configuration (e.g. a qcow2 L2-cache setting)."""
        self.variants[name] = description
        previous, self.variant = self.variant, name
        try:
            yield
        finally:
            self.variant = previous

    # -------------------------------------------------------------- recording
    def measurement_dir(self, index: int, step: Measure) -> Path:
        d = self.staging / "measurements" / _slug(self.variant) / f"{index:03d}-{_slug(step.label)}"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def log_event(self, kind: str, **data: Any) -> None:
        self.events.append({"utc": provenance.utc_now(), "variant": self.variant, "event": kind, **data})

    def record_measurement(self, index: int, step: Measure, *, chain_length: int, fio_run: fio.FioRun,
                           counters_before: dict[str, float], counters_after: dict[str, float],
                           extra: dict[str, Any] | None = None) -> None:
        delta = counter_delta(counters_before, counters_after)
        tidy = fio.tidy_rows(fio_run.result)
        record = {
            "variant": self.variant, "index": index, "phase": step.phase, "job": step.job.name,
            "repeat": step.repeat, "chain_length": chain_length, "rw": step.job.rw, "bs": step.job.bs,
            "iodepth": step.job.iodepth, "numjobs": step.job.numjobs, "wall_s": fio_run.wall_s,
            "fio": tidy, "counters_before": counters_before, "counters_after": counters_after,
            "counters_delta": delta, "recorded_utc": provenance.utc_now(), **(extra or {}),
        }
        write_json(fio_run.directory / "measurement.json", record)
        rel = fio_run.directory.relative_to(self.staging)
        for row in tidy:
            self.rows.append({
                "variant": self.variant, "index": index, "phase": step.phase, "job": step.job.name,
                "rw": step.job.rw, "repeat": step.repeat, "chain_length": chain_length, **row,
                **{f"host_{k}": v for k, v in sorted(delta.items())}, "path": str(rel),
            })

    # -------------------------------------------------------------- publishing
    def _devices(self) -> list:
        return [self.rig.device(n) for n in self.devices_used] if self.devices_used else list(self.rig.devices)

    def _measured_devices(self) -> list:
        named = self.parameters.get("devices") or ([self.parameters["device"]] if self.parameters.get("device") else [])
        found = [d for d in self.rig.devices if d.name in named]
        return found or list(self.rig.devices)

    def _publish(self) -> None:
        manifest = {
            "study": self.study, "run_id": self.run_id, "profile": self.profile, "rig": self.rig.name,
            "rig_kind": self.rig.kind, "rig_file": self.rig.source,
            # labelled by the devices the run measured (parameters["devices"] or ["device"]), else by the rig's
            "emulated": any(d.emulated for d in self._measured_devices()),
            "devices": [devices.identity(self.rig, d) for d in self.rig.devices],
            "parameters": self.parameters, "variants": self.variants, "events": self.events,
            "provenance": provenance.collect(), "started_utc": self.started_utc,
            "finished_utc": provenance.utc_now(), "measurements": len({r["path"] for r in self.rows}),
        }
        if self.rows:
            columns: list[str] = []
            for row in self.rows:
                columns += [c for c in row if c not in columns]
            tmp = self.staging / f".{RESULTS}.tmp"
            with open(tmp, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=columns)
                writer.writeheader()
                writer.writerows(self.rows)
            os.replace(tmp, self.staging / RESULTS)
        write_json(self.staging / MANIFEST, manifest)
        final = paths.study_dir(self.rig.name, self.study) / self.run_id
        final.parent.mkdir(parents=True, exist_ok=True)
        incoming = final.parent / f".incoming-{self.run_id}"
        shutil.rmtree(incoming, ignore_errors=True)
        try:
            os.rename(self.staging, incoming)
        except OSError:  # staging on another filesystem than data/
            shutil.copytree(self.staging, incoming)
        os.rename(incoming, final)
        self.published = final


def published_runs(rig: str, study: str, profile: str | None = None) -> list[Path]:
    """Complete runs of a study on a rig, oldest first (a run is complete once its manifest exists)."""
    root = paths.study_dir(rig, study)
    if not root.is_dir():
        return []
    runs = [d for d in sorted(root.iterdir()) if not d.name.startswith(".") and (d / MANIFEST).is_file()]
    if profile is not None:
        runs = [d for d in runs if json.loads((d / MANIFEST).read_text()).get("profile") == profile]
    return runs
