"""Do two runs of a study agree? Every value both runs' analyses give (snaptax.derived), side by side with
intervals, and every claim's verdict in both.

Two values are consistent when their difference is within the 95 % interval of the difference,
|a − b| ≤ √(h_a² + h_b²) (h: each interval's half-width; independent runs). Values without an interval (single
numbers, text) are compared for information only. A run pair reproduces when every claim has the same verdict in
both; that is what `python -m snaptax compare` exits non-zero for.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .errors import AnalysisError
from .values import DerivedValues, Value


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


def compare_derived(a: DerivedValues, b: DerivedValues) -> RunComparison:
    if a.study != b.study:
        raise AnalysisError(f"runs of different studies: {a.study} and {b.study}")
    values = tuple(ValueComparison(k, a.values[k], b.values[k]) for k in sorted(set(a.values) & set(b.values))
                   if ".run." not in k)
    claims_b = {c["id"]: c for c in b.claims}
    verdicts = tuple(VerdictComparison(c["id"], c["statement"], c["verdict"], claims_b[c["id"]]["verdict"])
                     for c in a.claims if c["id"] in claims_b)
    return RunComparison(a.study, a.run_id, b.run_id, values, verdicts)


def compare_runs(run_a: Path, run_b: Path) -> RunComparison:
    from . import derived

    return compare_derived(derived.values_of(run_a), derived.values_of(run_b))


def report(c: RunComparison, all_values: bool = False) -> list[str]:
    """The comparison as text lines: verdicts, then the values that are inconsistent (or all, with all_values)."""
    lines = [f"{c.study}: {c.run_a} vs {c.run_b}: {c.verdicts_reproduced} of {len(c.verdicts)} verdicts the same "
             f"({c.decisive_reproduced} of the {len(c.decisive)} claims that a run decided), "
             f"{len(c.inconsistent)} of {sum(v.comparable for v in c.values)} values with intervals inconsistent"]
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
