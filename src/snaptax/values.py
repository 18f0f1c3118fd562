"""Values: every number the paper or a notebook quotes, with its unit, interval and the run it came from.

A study's analysis returns Values (derived from a raw run, never written into it: snaptax.derived caches them
under build/, snaptax.paper.printedvalues commits what the paper prints), and the paper reads them through one
lookup, `\\val{key}` (the number) and `\\valci{key}` (number and 95 % interval), in the spirit of showyourwork's
`\\variable`. Keys are dotted and start with the study id (`chain_length.loss.on_disk_metadata.randrw`). How the
paper defines and checks that lookup is the paper's side (snaptax.paper.macros: values.tex, MissingValue).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import SnaptaxError
from .inference import SCALES, Estimate, inverse
from .stats import Interval

DERIVED_FORMAT = "snaptax-derived-values"
DERIVED_VERSION = 1
_KEY_RE = re.compile(r"^[a-z0-9_]+(\.[A-Za-z0-9_+-]+)+$")


class DerivedValuesFormatError(SnaptaxError):
    """Derived values (snaptax.derived's cache) of an unknown format or version."""


@dataclass(frozen=True)
class Value:
    """One quoted value. Numbers carry low/high (95 % interval; nan when there is none; −inf / inf for an end the
    data leave open, a profile likelihood that stays within its cut on that side) and n (repeats); text values (a
    run id, a device label, a tool version) carry text instead. has_interval, includes and side_of read only an
    interval with two finite ends: an open one is printed (formatted_ci), not judged."""

    key: str
    value: float = math.nan
    unit: str = ""
    low: float = math.nan
    high: float = math.nan
    n: int = 0
    digits: int = 0          # decimals the paper prints
    text: str | None = None
    method: str = ""         # how the interval was obtained ('' for a single number)
    # the t pivot of a value over independent replicates (inference.Estimate), which the verdict rule tests: its
    # standard error and degrees of freedom on the pivot scale; '' scale: the value has none
    se: float = math.nan
    dof: int = 0
    scale: str = ""
    independent: bool = False   # its n are independent runs (not samples within one run)

    def __post_init__(self) -> None:
        if not _KEY_RE.match(self.key):
            raise ValueError(f"bad value key {self.key!r} (dotted, starting with the study id)")

    @classmethod
    def of(cls, key: str, iv: Interval, unit: str, digits: int = 0) -> Value:
        return cls(key, iv.estimate, unit, iv.low, iv.high, iv.n, digits, None, iv.method)

    @classmethod
    def of_estimate(cls, key: str, est: Estimate, unit: str, digits: int = 0, method: str = "") -> Value:
        """A value over independent replicates, with its 95 % interval and the pivot the verdict rule tests."""
        low, high = est.interval(0.95)
        return cls(key, est.value, unit, low, high, est.n, digits, None,
                   method or f"t over {est.n} {'independent runs' if est.independent else 'samples'} ({est.scale})",
                   est.se, est.dof, est.scale, est.independent)

    @property
    def estimate(self) -> Estimate | None:
        """The value's t pivot (None when it has none: a single number, a fit's interval, text)."""
        if self.scale not in SCALES:
            return None
        return Estimate(inverse(self.scale, self.value), self.se, self.dof, self.n, self.scale, self.independent)

    @classmethod
    def where_defined(cls, key: str, estimate: float, low: float, high: float, n: int, unit: str, digits: int,
                      method: str) -> Value:
        """A value whose interval (and its method) is kept only where it is defined: n ≥ 2 repeats and finite
        ends."""
        defined = n > 1 and math.isfinite(low) and math.isfinite(high)
        return cls(key, estimate, unit, low if defined else math.nan, high if defined else math.nan, n, digits, None,
                   method if defined else "")

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def includes(self, x: float) -> bool:
        """The 95 % interval holds `x` (False without an interval)."""
        return self.has_interval and self.low <= x <= self.high

    def side_of(self, x: float) -> str:
        """Where the 95 % interval lies against `x`, as prose reads it: 'includes x', 'lies below x', 'lies above
        x', or 'has no interval'. A sentence whose truth depends on the run prints this instead of asserting one."""
        if not self.has_interval:
            return "has no interval"
        shown = f"{x:g}"
        if self.high < x:
            return f"lies below {shown}"
        return f"lies above {shown}" if self.low > x else f"includes {shown}"

    def formatted(self) -> str:
        if self.text is not None:
            return self.text
        return format_number(self.value, self.digits)

    def formatted_ci(self) -> str:
        """'12.3 [10.0, 14.5]' at the value's digits; an open end (±inf) in words, '12.3 [10.0, no upper end]' (a
        giant number would read as measured); the number alone without an interval (a nan end)."""
        if self.text is not None or math.isnan(self.low) or math.isnan(self.high):
            return self.formatted()
        low = "no lower end" if math.isinf(self.low) else format_number(self.low, self.digits)
        high = "no upper end" if math.isinf(self.high) else format_number(self.high, self.digits)
        return f"{self.formatted()} [{low}, {high}]"

    def to_json(self) -> dict[str, Any]:
        """The value as JSON without NaN or Infinity (strict JSON): nan as null, ±inf (an open end) as the strings
        'inf' / '-inf', which from_json reads back as ±inf."""
        d = asdict(self)
        for k in ("value", "low", "high", "se"):
            if isinstance(d[k], float) and math.isnan(d[k]):
                d[k] = None
            elif isinstance(d[k], float) and math.isinf(d[k]):
                d[k] = "inf" if d[k] > 0 else "-inf"
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Value:
        d = dict(d)
        for k in ("value", "low", "high", "se"):
            d[k] = math.nan if d.get(k) is None else float(d[k])
        return cls(**d)


def heldout_values(prefix: str, test: Any) -> list[Value]:
    """`<prefix>.<name>` for each number or text a held-out test quotes (models.heldout.HeldOut.quoted: error, worst,
    rms_pct, bound, n, fit_points, verdict, reason, predicts)."""
    return [Value(f"{prefix}.{name}", **q._asdict()) for name, q in test.quoted().items()]


def format_number(x: float, digits: int = 0) -> str:
    """A number as the paper prints it: "n/a" unless finite; with digits = 0 rounded to a whole number, thousands
    separated by a thin space (U+2009; TeX `\\,` after macros.tex_escape); else fixed-point with `digits`
    decimals; never a signed zero. macros.fmt, the tables' cells, is this escaped for TeX."""
    if x is None or not math.isfinite(x):
        return "n/a"
    if round(x, digits) == 0:
        x = 0.0       # no '-0.00': the sign of a value that rounds to zero is in its last bits, which hosts differ in
    if digits == 0:
        return f"{round(x):,}".replace(",", "\u2009")
    return f"{x:.{digits}f}"


@dataclass
class DerivedValues:
    """The derived values of one run, and the verdicts on the claims it tests (snaptax.derived caches them as JSON;
    they are never written into the run)."""

    study: str
    run_id: str
    rig: str
    profile: str
    values: dict[str, Value] = field(default_factory=dict)
    claims: list[dict[str, Any]] = field(default_factory=list)   # claims.Outcome.to_json() rows

    def add(self, values: Iterable[Value]) -> None:
        for v in values:
            if v.key in self.values:
                raise ValueError(f"value {v.key!r} given twice")
            self.values[v.key] = v

    def to_json(self) -> dict[str, Any]:
        return {"format": DERIVED_FORMAT, "format_version": DERIVED_VERSION, "study": self.study,
                "run_id": self.run_id, "rig": self.rig, "profile": self.profile,
                "values": {k: v.to_json() for k, v in sorted(self.values.items())}, "claims": self.claims}

    @classmethod
    def from_json(cls, d: dict[str, Any], where: Path | str = "derived values") -> DerivedValues:
        if d.get("format") != DERIVED_FORMAT or d.get("format_version") != DERIVED_VERSION:
            raise DerivedValuesFormatError(f"{where}: derived values format {d.get('format')!r} version "
                                           f"{d.get('format_version')!r} is not {DERIVED_FORMAT} {DERIVED_VERSION}")
        r = cls(d["study"], d["run_id"], d["rig"], d["profile"])
        r.values = {k: Value.from_json(v) for k, v in d["values"].items()}
        r.claims = list(d.get("claims", []))
        return r
