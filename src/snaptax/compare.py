"""Do two runs of a study agree? Every value both runs' analyses give (snaptax.derived), side by side with
intervals, and every claim's verdict in both.

Two values are consistent when their difference is within the 95 % interval of the difference,
|a − b| ≤ √(h_a² + h_b²) (h: each interval's half-width; independent runs). Values without an interval (single
numbers, text) are compared for information only. A run pair reproduces when every claim has the same verdict in
both; that is what `python -m snaptax compare` exits non-zero for.

A rerun is a published run that git does not track (measured here, e.g. by `make paper`, and not committed); its
reference is the newest committed run of the same study at the same profile (`reruns`): a committed smoke run is no
reference for a quick rerun, which measures a larger plan.
"""
from __future__ import annotations

import math
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import paths, registration
from .errors import AnalysisError
from .record.parts import short_run_id
from .values import DerivedValues, Value

if TYPE_CHECKING:
    from .record import RunRef


@dataclass(frozen=True)
class ValueComparison:
    key: str
    a: Value
    b: Value

    @property
    def comparable(self) -> bool:
        return self.a.text is None and self.a.has_interval and self.b.has_interval

    @property
    def distance(self) -> float:
        """|a − b| in units of the interval of the difference (≤ 1: consistent); nan when not comparable."""
        if not self.comparable:
            return math.nan
        half = math.hypot((self.a.high - self.a.low) / 2, (self.b.high - self.b.low) / 2)
        diff = abs(self.a.value - self.b.value)
        if half == 0:
            return 0.0 if diff == 0 else math.inf
        return diff / half

    @property
    def consistent(self) -> bool | None:
        d = self.distance
        return None if math.isnan(d) else d <= 1.0


@dataclass(frozen=True)
class VerdictComparison:
    claim: str
    statement: str
    a: str
    b: str

    @property
    def same(self) -> bool:
        return self.a == self.b

    @property
    def decisive(self) -> bool:
        """At least one of the two runs decided the claim (a verdict other than inconclusive): an inconclusive
        verdict repeated is the same verdict but reproduces no finding."""
        return not self.a == self.b == "inconclusive"


@dataclass(frozen=True)
class RunComparison:
    study: str
    run_a: str
    run_b: str
    values: tuple[ValueComparison, ...]
    verdicts: tuple[VerdictComparison, ...]
    # the inferred operating points each run measured at (operating_points_of); runs at different ones compare two
    # stand-in settings, not a measurement with its rerun
    points_a: str = ""
    points_b: str = ""

    @property
    def same_operating_points(self) -> bool:
        return self.points_a == self.points_b

    @property
    def verdicts_reproduced(self) -> int:
        return sum(v.same for v in self.verdicts)

    @property
    def decisive(self) -> list[VerdictComparison]:
        """The claims that at least one run decided (VerdictComparison.decisive)."""
        return [v for v in self.verdicts if v.decisive]

    @property
    def decisive_reproduced(self) -> int:
        """Claims decided by both runs, the same way."""
        return sum(v.same for v in self.decisive)

    @property
    def inconsistent(self) -> list[ValueComparison]:
        return [v for v in self.values if v.consistent is False]

    @property
    def largest(self) -> ValueComparison | None:
        finite = [v for v in self.values if math.isfinite(v.distance)]
        return max(finite, key=lambda v: v.distance) if finite else None

    @property
    def reproduced(self) -> bool:
        return all(v.same for v in self.verdicts)


Recorded = dict[str, str] | None      # the registration a run's manifest recorded


def _verdicts(d: DerivedValues, by_registration: bool, recorded: Recorded) -> dict[str, str]:
    """Each claim's verdict in one run (unadjusted: a pair of runs is compared claim by claim): as the analysis
    gave it, or (by_registration) as the registration in force when it was measured judges it (snaptax.judged;
    `recorded`: what the run's manifest recorded)."""
    if not by_registration:
        return {c["id"]: c["verdict"] for c in d.claims}
    from . import claims, judged

    found = [claims.from_json(c) for c in d.claims]
    return {o.claim.id: o.verdict for o in judged.for_run(found, recorded, judged.inferred_in(d))}


def compare_derived(a: DerivedValues, b: DerivedValues, recorded: tuple[Recorded, Recorded] | None = None) \
        -> RunComparison:
    """Two runs of a study compared: their values, and their claims' verdicts — with `recorded` (what each run's
    manifest recorded as its registration) as their registrations judge them, else as the analyses gave them."""
    if a.study != b.study:
        raise AnalysisError(f"runs of different studies: {a.study} and {b.study}")
    values = tuple(ValueComparison(k, a.values[k], b.values[k]) for k in sorted(set(a.values) & set(b.values))
                   if ".run." not in k)
    va = _verdicts(a, recorded is not None, recorded[0] if recorded else None)
    vb = _verdicts(b, recorded is not None, recorded[1] if recorded else None)
    verdicts = tuple(VerdictComparison(c["id"], c["statement"], va[c["id"]], vb[c["id"]])
                     for c in a.claims if c["id"] in vb)
    return RunComparison(a.study, a.run_id, b.run_id, values, verdicts, operating_points_of(a),
                         operating_points_of(b))


def operating_points_of(d: DerivedValues) -> str:
    """The inferred operating points a run measured at (judged.operating_points_of: the one reader of its run
    value)."""
    from . import judged

    return judged.operating_points_of(d)


def compare_runs(run_a: RunRef, run_b: RunRef) -> RunComparison:
    """Two published runs (or complete sets of part runs) compared, their verdicts judged by the registration each
    was measured under."""
    from .record import PartSet

    # a set's parts all recorded the same registration (record.parts checks it when it combines them)
    a, b = (r.runs[0] if isinstance(r, PartSet) else r for r in (run_a, run_b))
    return compare_derived(_values_of(run_a), _values_of(run_b),
                           (registration.recorded_in(a), registration.recorded_in(b)))


def _values_of(run: RunRef) -> DerivedValues:
    """A run's derived values; an analysis that fails on a run it was never meant to read alone (a part of a set
    lacking what every claim reads: a KeyError, an empty table) becomes the one line naming the run, where the CLI
    would otherwise print a traceback."""
    from . import derived

    try:
        return derived.values_of(run)
    except (KeyError, IndexError, ValueError, ZeroDivisionError) as exc:
        raise AnalysisError(f"{shown(run)}: its analysis failed ({type(exc).__name__}: {exc}); a part of a set is "
                            "analysed alone only where its study reads it so") from exc


def report(c: RunComparison, all_values: bool = False) -> list[str]:
    """The comparison as text lines: verdicts, then the values that are inconsistent (or all, with all_values)."""
    lines = [f"{c.study}: {short_run_id(c.run_a)} vs {short_run_id(c.run_b)}: "
             f"{c.verdicts_reproduced} of {len(c.verdicts)} verdicts the same "
             f"({c.decisive_reproduced} of the {len(c.decisive)} claims that a run decided; each claim judged "
             "alone, so a verdict may differ from the paper's, Holm-adjusted within each seed's family), "
             f"{len(c.inconsistent)} of {sum(v.comparable for v in c.values)} values with intervals inconsistent"]
    if not c.same_operating_points:
        lines.append(f"  not a rerun: the runs measured at different operating points ({c.points_a} | {c.points_b});"
                     " their differences include the change of stand-in setting")
    for vc in c.verdicts:
        mark = "same" if vc.same else "DIFFERENT"
        lines.append(f"  claim {vc.claim}: {vc.a} | {vc.b}  {mark}")
    shown = c.values if all_values else tuple(c.inconsistent)
    for v in shown:
        d = v.distance
        lines.append(f"  {v.key}: {v.a.formatted_ci()} | {v.b.formatted_ci()} {v.a.unit}".rstrip()
                     + (f"  ({d:.1f} intervals apart)" if math.isfinite(d) else ""))
    if c.largest is not None:
        lines.append(f"  largest difference: {c.largest.key}, {c.largest.distance:.2f} intervals")
    return lines


@dataclass(frozen=True)
class Rerun:
    """A run git does not track, and the committed run of its study and profile it is compared with (None: there
    is none)."""

    study: str
    rerun: RunRef
    committed: RunRef | None


def tracked_run_names(rig: str, study: str) -> set[str]:
    """Names of a study's run directories that git tracks (its index: committed or staged); none when the data
    directory is outside the repository (SNAPTAX_DATA_DIR) or git cannot say."""
    root = paths.study_dir(rig, study).resolve()
    repo = paths.REPO_ROOT.resolve()
    if not root.is_relative_to(repo):
        return set()
    try:
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "--", str(root)], capture_output=True, text=True,
                             check=False).stdout
    except OSError:
        return set()
    inside = root.relative_to(repo)
    return {Path(line).relative_to(inside).parts[0] for line in out.splitlines() if line.strip()}


def reruns(rig: str, profile: str, studies: list[str]) -> list[Rerun]:
    """Every readable run of the given studies at `profile` (a whole run, or a complete set of part runs:
    record.readable_runs) that git does not track, oldest first per study, each with the newest tracked run of that
    study and profile. A set is tracked when all its part runs are."""
    from .record import PartSet, readable_runs

    def dirs(r: RunRef) -> tuple[Path, ...]:
        return r.runs if isinstance(r, PartSet) else (r,)

    out = []
    for study in studies:
        runs = readable_runs(rig, study, profile)
        tracked = tracked_run_names(rig, study)
        committed = [r for r in runs if all(d.name in tracked for d in dirs(r))]
        out += [Rerun(study, r, committed[-1] if committed else None) for r in runs if r not in committed]
    return out


def shown(path: RunRef) -> str:
    """A run's directory as a message names it (a set of part runs: the study's directory and the set's name):
    relative to the repository when inside it."""
    place = Path(str(path))
    try:
        return str(place.resolve().relative_to(paths.REPO_ROOT.resolve()))
    except ValueError:
        return str(place)
