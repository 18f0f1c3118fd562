"""The run record's format: file names, columns, the manifest and a measurement, typed (format version 5).

A run is assembled in the rig's work directory (staging) and moved into
    data/<rig>/<study>/<run-id>/
only after its last measurement and its manifest are written. A failed or interrupted run removes its staging
directory; nothing of it reaches data/. Layout of a published run (format version 5):
    manifest.json        format + version, study, profile, rig and devices, study parameters, variants, events,
                         provenance, completion time, and the part of the study it measured (null: all of it)
    results.csv          one row per measurement and direction: the plan coordinates and fio's summary
    counters.csv         one row per measurement and counter (long form): source.name, kind, unit, before,
                         after, delta (counters only; see snaptax.counters)
    measurements/<variant>/<NNN>-<label>/
        job.fio fio.json fio_*.log     exactly what fio read and wrote
        measurement.json               the same coordinates, fio summary and counters, plus study extras
    measurements/<variant>/host_series.csv   a timeline study's per-second host counters (snaptax.timeline)
    engine-logs/<variant>/<engine>/          an engine's own logs (the LVM thin script's, the guest's dmesg)
<variant> and <label> are slugs: runs of anything but letters, digits and ._- become one '-' (_slug).
Nothing writes into a published run: what an analysis derives from it lives elsewhere (snaptax.derived).
Runs of older formats are upgraded when they are read, once, in snaptax.record.upgrade; nothing else reads them.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import counters as countermod
from ..errors import SnaptaxError
from ..profiles import Profile
from . import lateness
from .lateness import emulator_lateness_s, lateness_fraction, service_time_s, steal_fraction

MANIFEST = "manifest.json"
RESULTS = "results.csv"
COUNTERS = "counters.csv"
MEASUREMENT = "measurement.json"
MEASUREMENTS = "measurements"   # measurements/<variant slug>/ in a run
ENGINE_LOGS = "engine-logs"     # engine-logs/<variant slug>/<engine>/ in a run: an engine's own logs
RECORD_FORMAT = "snaptax-run"
# 3: every field written (no defaults on reading), emulator_version; 4: studies' scales nested; 5: the part measured
RECORD_VERSION = 5
# The spindle emulator's versions, as a run's manifest records them (emulator_version): what a reader of a run must
# know about the emulator that timed it. Each entry says what changed.
EMULATOR_VERSIONS = {
    1: "the Python emulator before its flush fix (commit 9f03b4ac1, 2026-11-27): a flush with nothing to destage "
       "was answered at once, not after the drive's command overhead",
    2: "the Python emulator with the flush fix",
    3: "the compiled emulator (spindle_core.c in the nbdkit plugin spindle_plugin.c, 2026-11-28): the same model "
       "(trace-equivalent to the Python one), each reply timed by its own request thread; counts the model time "
       "per command (emulator.model_s_sum), by which flash-class lateness is judged. From commit 8dabdccee "
       "(2026-12-01) its spin margin is bounded and one request thread spins at a time; before it the margin could "
       "run away on the flash tier and starve the clients with no reply late (the tiering study's flash-served "
       "rates). Not a new version, since runs from 8dabdccee were recorded as 3: a run's commit tells them apart",
}

# coordinates of a measurement in its plan: the first columns of results.csv, the keys of per-measurement tables
KEYS = ("variant", "index", "phase", "job", "rw", "repeat", "chain_length")
FIO_COLUMNS = ("direction", "iops", "bw_kib", "ios", "runtime_ms", "clat_mean_us", "clat_p50_us", "clat_p99_us",
               "lat_mean_us", "errors")


class RecordError(SnaptaxError):
    """A run directory that is not a complete run of a known format version."""


def slug(text: str) -> str:
    """A variant's or a label's directory name: runs of anything but letters, digits and ._- become one '-'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


@dataclass(frozen=True)
class RunPart:
    """The part of a study a run measured (issue 49.1: a study too long for one measuring window is measured in parts,
    each a published run with its own baselines, read together as one record once every part of the set is
    published: record.parts). name: this run's part; set: every part of the study at the run's profile and rig, in
    the plan's order (the set the run belongs to)."""

    name: str
    set: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "set": list(self.set)}

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> RunPart | None:
        if d is None:
            return None
        part = cls(str(d["name"]), tuple(str(n) for n in d["set"]))
        if part.name not in part.set:
            raise ValueError(f"part {part.name!r} is not one of its set {list(part.set)}")
        return part


@dataclass(frozen=True)
class Manifest:
    """manifest.json of a run, typed. parameters: the study's own (JSON), read by that study's analysis as its typed
    record through RunRecord.parameters."""

    format_version: int
    study: str
    run_id: str
    profile: Profile
    rig: str
    rig_kind: str
    rig_file: str
    emulated: bool
    devices: tuple[dict, ...]
    measured_devices: tuple[str, ...]
    parameters: dict[str, Any]
    variants: dict[str, dict]
    events: tuple[dict, ...]
    provenance: dict[str, Any]
    started_utc: str
    finished_utc: str
    measurements: int
    planned_points: int
    planned_seconds: float        # 0: the plan predicted no time
    lock_wait_s: float
    emulator_version: int | None  # the spindle emulator's version (EMULATOR_VERSIONS); None: nothing emulated
    registration: dict[str, str] | None   # the pre-registration in force (file, sha256); None: before any
    part: RunPart | None = None   # the part of the study measured; None: all of it (a whole run)
    # A combined record's manifest (record.parts) only, never written: the manifests of the part runs it stands for
    parts: tuple[Manifest, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_json(cls, d: dict[str, Any], where: Path) -> Manifest:
        """A manifest of this format (RecordError otherwise: older formats are upgraded before, by
        record.upgrade)."""
        if d.get("format") != RECORD_FORMAT or d.get("format_version") != RECORD_VERSION:
            raise RecordError(f"{where}: run record format {d.get('format')!r} version {d.get('format_version')!r} "
                              f"is not {RECORD_FORMAT} {RECORD_VERSION} (this snaptax reads only that)")
        try:
            ver = d["emulator_version"]
            return cls(d["format_version"], d["study"], d["run_id"], Profile(**d["profile"]), d["rig"],
                       d["rig_kind"], d["rig_file"], bool(d["emulated"]), tuple(d["devices"]),
                       tuple(d["measured_devices"]), d["parameters"], d["variants"], tuple(d["events"]),
                       d["provenance"], d["started_utc"], d["finished_utc"], int(d["measurements"]),
                       int(d["planned_points"]), float(d["planned_seconds"]), float(d["lock_wait_s"]),
                       None if ver is None else int(ver), d["registration"], RunPart.from_json(d["part"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordError(f"{where}: manifest field missing or malformed: {exc}") from None

    def measured_seconds(self) -> float:
        """The time the run measured (s), from holding the lock to publication; a combined record's is the sum of
        its parts' (the hours between two measuring windows were not measuring); nan when a time is unreadable."""
        if self.parts:
            return sum(m.measured_seconds() for m in self.parts)
        try:
            start = datetime.fromisoformat(self.started_utc.replace("Z", "+00:00"))
            end = datetime.fromisoformat(self.finished_utc.replace("Z", "+00:00"))
        except ValueError:
            return float("nan")
        return (end - start).total_seconds()

    def measured_device_entries(self) -> list[dict]:
        named = [d for d in self.devices if d["name"] in self.measured_devices]
        return named or list(self.devices)

    def device_label(self) -> str:
        return ", ".join(f"{d['name']} ({d['medium']}{', EMULATED' if d['emulated'] else ''})"
                         for d in self.measured_device_entries())

    def tool(self, name: str) -> str:
        return self.provenance.get("tools", {}).get(name) or "?"

    @property
    def commit(self) -> str:
        return (self.provenance.get("git", {}).get("commit") or "unknown")[:10]

    @property
    def code_label(self) -> str:
        """The commit the run measured with, marked '+' when the working tree had changes on top of it."""
        return self.commit + ("+" if self.provenance.get("git", {}).get("dirty") else "")

    @property
    def host_label(self) -> str:
        """The host's CPU model as a reader tells hosts apart ("AMD EPYC", "Intel Xeon"): the recorded model without
        trademark signs, the words "Processor" and "CPU" and a clock rate; "?" when none was recorded."""
        cpu = self.provenance.get("host", {}).get("cpu") or ""
        cpu = re.sub(r"\((R|TM|r|tm)\)|\bProcessor\b|\bCPU\b|@.*$", " ", cpu)
        return " ".join(cpu.split()) or "?"


@dataclass(frozen=True)
class Measurement:
    """measurement.json of one fio run, typed."""

    variant: str
    index: int
    label: str
    phase: str
    job: str
    rw: str
    repeat: int
    chain_length: int
    bs: int
    iodepth: int
    numjobs: int
    wall_s: float
    fio: tuple[dict, ...]
    counters: dict[str, countermod.CounterValue]
    extra: dict[str, Any]
    directory: Path

    def delta(self, name: str) -> float:
        """A counter's difference over the measurement (KeyError if absent; ValueError for a gauge)."""
        c = self.counters[name]
        if c.delta is None:
            raise ValueError(f"{name} is a gauge: it has no difference, read .after")
        return c.delta

    def ios(self, direction: str) -> int:
        return sum(int(r["ios"]) for r in self.fio if r["direction"] == direction)

    def iops(self, direction: str | None = None) -> float:
        return sum(float(r["iops"]) for r in self.fio if direction in (None, r["direction"]))

    @classmethod
    def load(cls, directory: Path) -> Measurement:
        d = json.loads((directory / MEASUREMENT).read_text())
        counted = {n: countermod.CounterValue(n, c["kind"], c["unit"], float(c["before"]), float(c["after"]))
                   for n, c in d["counters"].items()}
        names = {f.name for f in fields(cls)} - {"fio", "counters", "directory", "extra"}
        return cls(**{k: d[k] for k in names}, fio=tuple(d["fio"]), counters=counted, extra=d.get("extra", {}),
                   directory=directory)

    @property
    def _deltas(self) -> dict[str, float]:
        return {n: c.delta for n, c in self.counters.items() if c.delta is not None}

    @property
    def emulator_lateness_s(self) -> float:
        """Mean lateness of the emulator's releases against its own schedule (nan when not emulated)."""
        return emulator_lateness_s(self._deltas)

    @property
    def service_time_s(self) -> float:
        """Mean time a member drive was busy per request it served (service_time_s)."""
        return service_time_s(self._deltas)

    @property
    def lateness_fraction(self) -> float:
        return lateness_fraction(self._deltas)

    @property
    def steal_fraction(self) -> float:
        return steal_fraction(self._deltas)

    @property
    def device_class(self) -> str:
        """'mechanical' or 'flash' by the measurement's member service time ('' when not emulated)."""
        cls = lateness.device_class(self._deltas)
        return cls.device_class if cls else ""

    @property
    def lateness_share(self) -> float:
        """The mean lateness over its device class's reference (lateness.lateness_share)."""
        return lateness.lateness_share(self._deltas)

    @property
    def flagged(self) -> bool:
        return lateness.flagged(self._deltas)
