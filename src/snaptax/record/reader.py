"""Reading a published run: RunRecord.load is the only reader; it upgrades older formats (snaptax.record.upgrade).
"""
from __future__ import annotations

import json
import math
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import paths
from ..studyparams import P
from . import lateness
from .lateness import STEAL_NOTABLE
from .schema import COUNTERS, KEYS, MANIFEST, MEASUREMENTS, RESULTS, Manifest, Measurement, RecordError, slug as _slug
from .upgrade import upgrade

if TYPE_CHECKING:
    import pandas as pd


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
        return cls(path, Manifest.from_json(upgrade(d, path), path / MANIFEST))

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
