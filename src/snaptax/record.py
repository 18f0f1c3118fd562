"""Run records: everything one study run measured, written so that data/ never holds half a run, and read back
through one typed, versioned reader (RunRecord.load).

A run is assembled in the rig's work directory (staging) and moved into
    data/<rig>/<study>/<run-id>/
only after its last measurement and its manifest are written. A failed or interrupted run removes its staging
directory; nothing of it reaches data/. Layout of a published run (format version 2):
    manifest.json        format + version, study, profile, rig and devices, study parameters, variants, events,
                         provenance, completion time
    results.csv          one row per measurement and direction: the plan coordinates and fio's summary
    counters.csv         one row per measurement and counter (long form): source.name, kind, unit, before,
                         after, delta (counters only; see snaptax.counters)
    results.json         every value the paper and the notebooks quote (written by the analysis, snaptax.values)
    measurements/<variant>/<NNN>-<label>/
        job.fio fio.json fio_*.log     exactly what fio read and wrote
        measurement.json               the same coordinates, fio summary and counters, plus study extras
    measurements/<variant>/host_series.csv   a timeline study's per-second host counters (snaptax.timeline)
    engine-logs/<variant>/<engine>/          an engine's own logs (the LVM thin script's, the guest's dmesg)
<variant> and <label> are slugs: runs of anything but letters, digits and ._- become one '-' (_slug).
"""
from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import counters as countermod, devices, lateness, paths, progress, provenance
from .errors import SnaptaxError
from .lateness import emulator_lateness_s, lateness_fraction, service_time_s
from .lock import measurement_lock
from .plan import Measure
from .profiles import Profile
from .rig import Rig
from .studyparams import P

if TYPE_CHECKING:
    import pandas as pd

    from . import fio
    from .procs import CpuTimes

MANIFEST = "manifest.json"
RESULTS = "results.csv"
COUNTERS = "counters.csv"
MEASUREMENT = "measurement.json"
MEASUREMENTS = "measurements"   # measurements/<variant slug>/ in a run
ENGINE_LOGS = "engine-logs"     # engine-logs/<variant slug>/<engine>/ in a run: an engine's own logs
RECORD_FORMAT = "snaptax-run"
RECORD_VERSION = 2
# coordinates of a measurement in its plan: the first columns of results.csv, the keys of per-measurement tables
KEYS = ("variant", "index", "phase", "job", "rw", "repeat", "chain_length")
FIO_COLUMNS = ("direction", "iops", "bw_kib", "ios", "runtime_ms", "clat_mean_us", "clat_p50_us", "clat_p99_us",
               "lat_mean_us", "errors")
# an emulated measurement is flagged when the emulator released requests later than its own schedule by more
# than its device class's limit, on average: its timing is then the host's, not the model's. The limits are
# declared in snaptax.lateness; LATENESS_LIMIT is the mechanical drives' (the paper's paper.lateness_limit_pct)
LATENESS_LIMIT = lateness.MECHANICAL.fraction


class RecordError(SnaptaxError):
    """A run directory that is not a complete run of a known format version."""


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


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def _write_csv(path: Path, columns: list[str], rows: list[dict]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="raise")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


# ====================================================================== writing

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

    def __post_init__(self) -> None:
        if not self.run_id:
            self.run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{_slug(self.profile.name)}"
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
        from . import fio

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

    planned_points / planned_seconds (from the study's StudyPlan) drive the progress line and its ETA.
    """

    def __init__(self, rig: Rig, study: str, profile: Profile, parameters: dict[str, Any], *,
                 devices_used: tuple[str, ...] = (), planned_points: int = 0, planned_seconds: float = 0.0) -> None:
        run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{_slug(profile.name)}"
        super().__init__(rig, study, profile, parameters, rig.rig_work_dir / "staging" / study / run_id,
                         devices_used, planned_points, planned_seconds, run_id)
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
        if self.provenance.get("git", {}).get("dirty"):
            self.code_diff = provenance.uncommitted_diff() or None
        try:
            if self.staging.parent.exists():
                for stale in self.staging.parent.iterdir():
                    shutil.rmtree(stale, ignore_errors=True)
            from .backends import detach_stale_loops  # under the lock: no other run can own them
            detach_stale_loops(self.rig.work_dir)
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
                self.progress.say(RunRecord.load(final).validity_line())
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)
            self._lock.__exit__(None, None, None)


# ====================================================================== reading

# Profile fields that runs of format 2 may carry but Profile no longer has: `max_chain` moved into the
# chain-length study's own scale (studies/chain_length/plan.ChainScale); the run's parameters keep its value.
RETIRED_PROFILE_FIELDS = ("max_chain",)


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
    planned_seconds: float
    lock_wait_s: float = 0.0      # runs before 2026-11-23T23 did not record it (their start includes any wait)

    @classmethod
    def from_json(cls, d: dict[str, Any], where: Path) -> Manifest:
        if d.get("format") != RECORD_FORMAT or d.get("format_version") != RECORD_VERSION:
            raise RecordError(f"{where}: run record format {d.get('format')!r} version {d.get('format_version')!r} "
                              f"is not {RECORD_FORMAT} {RECORD_VERSION} (this snaptax reads only that)")
        try:
            prof = Profile(**{k: v for k, v in d["profile"].items() if k not in RETIRED_PROFILE_FIELDS})
            return cls(d["format_version"], d["study"], d["run_id"], prof, d["rig"], d["rig_kind"], d["rig_file"],
                       bool(d["emulated"]), tuple(d["devices"]), tuple(d["measured_devices"]), d["parameters"],
                       d["variants"], tuple(d["events"]), d["provenance"], d["started_utc"], d["finished_utc"],
                       int(d["measurements"]), int(d.get("planned_points", 0)),
                       float(d.get("planned_seconds", 0.0)), float(d.get("lock_wait_s", 0.0)))
        except (KeyError, TypeError) as exc:
            raise RecordError(f"{where}: manifest field missing or malformed: {exc}") from None

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


# the steal share from which a flagged run's line names the hypervisor: below it, steal is rounding
STEAL_NOTABLE = 0.01


def machine_counters(cpu: CpuTimes | None) -> dict[str, float]:
    """The machine's CPU times as counters (machine.cpu_{busy,idle,steal}_s; none when not sampled)."""
    if cpu is None:
        return {}
    return {"machine.cpu_busy_s": cpu.busy_s, "machine.cpu_idle_s": cpu.idle_s, "machine.cpu_steal_s": cpu.steal_s}


def steal_fraction(deltas: dict[str, float]) -> float:
    """The share of the machine's CPU time the hypervisor took over a measurement: steal / (busy + idle + steal)
    (dimensionless; nan when the CPU times were not recorded, as in runs made before 2026-11-27)."""
    busy, idle, steal = (deltas.get(f"machine.cpu_{k}_s") for k in ("busy", "idle", "steal"))
    if busy is None or idle is None or steal is None or not busy + idle + steal:
        return math.nan
    return steal / (busy + idle + steal)


class RunRecord:
    """A published run, read through the one typed reader. RunRecord.load(path) validates the format version."""

    def __init__(self, path: Path, manifest: Manifest) -> None:
        self.path = path
        self.manifest = manifest

    @classmethod
    def load(cls, path: Path | str) -> RunRecord:
        path = Path(path)
        try:
            d = json.loads((path / MANIFEST).read_text())
        except FileNotFoundError:
            raise RecordError(f"{path}: not a complete run (no {MANIFEST})") from None
        except ValueError as exc:
            raise RecordError(f"{path / MANIFEST}: not JSON ({exc})") from None
        return cls(path, Manifest.from_json(d, path / MANIFEST))

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    def parameters(self, kind: type[P]) -> P:
        """The study's parameters as its typed record (a studyparams.StudyParameters of the study's plan), checked:
        a missing or mistyped field raises ConfigError naming this run's manifest and the field."""
        return kind.from_json(self.manifest.parameters, f"{self.path / MANIFEST} (parameters)")

    def variant_dir(self, variant: str) -> Path:
        """measurements/<variant>/ of this run, as RunWriter.variant_dir named it (a study's per-variant files)."""
        return self.path / MEASUREMENTS / _slug(variant)

    @cached_property
    def measurements(self) -> tuple[Measurement, ...]:
        dirs = sorted({self.path / p for p in self.results()["path"]}, key=lambda p: p.name)
        out = [Measurement.load(d) for d in dirs]
        return tuple(sorted(out, key=lambda m: (m.variant, m.index)))

    def results(self) -> pd.DataFrame:
        """results.csv: one row per measurement and direction."""
        import pandas as pd

        return pd.read_csv(self.path / RESULTS)

    def counters(self) -> pd.DataFrame:
        """counters.csv: one row per measurement and counter (long form)."""
        import pandas as pd

        return pd.read_csv(self.path / COUNTERS)

    def extra_json(self, name: str) -> Any:
        """A study's own JSON file beside the measurements (e.g. memory_dump's guest_dump.json), or None when the
        run has none (a run of an older version of the study)."""
        p = self.path / name
        if not p.exists():
            return None
        try:
            return json.loads(p.read_text())
        except ValueError as exc:
            raise RecordError(f"{p}: not JSON ({exc})") from None

    def per_measurement(self, counters: tuple[str, ...] = ()) -> pd.DataFrame:
        """One row per fio run: KEYS, iops, read_iops, write_iops, read_ios, write_ios, clat_mean_us, and the
        difference of each named counter (a column named like the counter; gauges give their `after` value)."""
        import pandas as pd

        df = self.results()
        pivot = df.pivot_table(index=list(KEYS), columns="direction", values=["iops", "ios", "clat_mean_us"],
                               aggfunc="sum", fill_value=0)
        pivot.columns = [f"{d}_{v}" for v, d in pivot.columns]
        out = pivot.reset_index()
        for col in ("read_iops", "write_iops", "read_ios", "write_ios", "read_clat_mean_us", "write_clat_mean_us"):
            if col not in out:
                out[col] = 0.0
        out["iops"] = out["read_iops"] + out["write_iops"]
        if counters:
            c = self.counters()
            c = c[c.counter.isin(counters)].copy()
            c["value"] = c["delta"].where(c["kind"] == "counter", c["after"]).astype(float)
            wide = c.pivot_table(index=["variant", "index"], columns="counter", values="value", aggfunc="first")
            wide = wide.reindex(columns=list(counters)).reset_index()
            wide.columns.name = None
            out = out.merge(wide, on=["variant", "index"], how="left")
        return out.sort_values(["variant", "index"]).reset_index(drop=True) if len(out) else pd.DataFrame(out)

    def lateness(self) -> pd.DataFrame:
        """Emulated measurements: mean emulator lateness, mean service time, their ratio and the flag."""
        import pandas as pd

        rows = [{"variant": m.variant, "index": m.index, "label": m.label,
                 "lateness_us": m.emulator_lateness_s * 1e6, "service_ms": m.service_time_s * 1e3,
                 "lateness_fraction": m.lateness_fraction, "device_class": m.device_class,
                 "lateness_share": m.lateness_share, "flagged": m.flagged}
                for m in self.measurements if math.isfinite(m.emulator_lateness_s)]
        return pd.DataFrame(rows, columns=["variant", "index", "label", "lateness_us", "service_ms",
                                           "lateness_fraction", "device_class", "lateness_share", "flagged"])

    def validity_line(self) -> str:
        """The last line a run prints: how many of its emulated measurements are flagged for lateness."""
        late = self.lateness()
        if late.empty:
            return f"{self.run_id}: no emulated measurements (no emulator lateness to check)"
        worst = float(late.lateness_fraction.max()) * 100
        bad = int(late.flagged.sum())
        if bad:
            steal = [s for m in self.measurements if m.flagged and math.isfinite(s := m.steal_fraction)]
            why = (f"the hypervisor took up to {max(steal) * 100:.1f} % of the CPU time (steal) in them"
                   if steal and max(steal) >= STEAL_NOTABLE else "the machine was busy")
            return (f"{self.run_id}: WARNING {bad} of {len(late)} emulated measurements flagged: emulator lateness "
                    f"above its device class's limit ({lateness.limits_text()}; worst {worst:.1f} % of the member "
                    f"service time); {why}")
        return f"{self.run_id}: emulator lateness within its device class's limit ({lateness.limits_text()}; " \
               f"worst {worst:.2f} % of the member service time) in all {len(late)} emulated measurements"


def published_runs(rig: str, study: str, profile: str | None = None) -> list[Path]:
    """Complete runs of a study on a rig, oldest first (a run is complete once its manifest exists)."""
    root = paths.study_dir(rig, study)
    if not root.is_dir():
        return []
    runs = [d for d in sorted(root.iterdir()) if not d.name.startswith(".") and (d / MANIFEST).is_file()]
    if profile is not None:
        runs = [d for d in runs if json.loads((d / MANIFEST).read_text()).get("profile", {}).get("name") == profile]
    return runs
