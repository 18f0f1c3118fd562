"""Published claims of the seed studies (cited reference values) and verdicts on our measurements.

A published number appears in the paper only through a Claim, with its bibliography key and its place in the
source; our number is a Value from data. Every claim is an effect against its no-effect value (a loss against
0 %, a ratio in percent against 100 %, a factor against 1), and the verdict is made on the 95 % interval of our
value — never on a single number or the min–max of repeats. The rule is stated once, here, and printed in the paper.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from .errors import ConfigError
from .values import Value

# C<seed>-<number>[<letter>]: the numbering of the seeds' claims in the issues (seed 001's C001-1 … C001-7)
SEED_LABEL_RE = re.compile(r"C00[0-4]-[0-9]+[a-z]?")

Verdict = Literal["agrees", "same direction", "differs", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = ("agrees", "same direction", "differs", "inconclusive")

VERDICT_RULE = (
    "Each claim is an effect against its no-effect value (0 % for a loss, 100 % for a ratio, 1 for a factor), "
    "and is judged on the 95 % confidence interval of our value from its repeats, against a tolerance band "
    "(published value ± tolerance, whose basis each claim states). "
    "inconclusive: fewer than two repeats, or the interval is wider than the band (half-width > tolerance) and "
    "overlaps it, so that it can neither show agreement nor exclude the published value; "
    "agrees: the interval is no wider than the band and our estimate lies within the band; "
    "same direction: the published value is an effect (farther than the tolerance from the no-effect value) and "
    "so is ours by the same measure, on the same side (our whole interval lies beyond the no-effect value ± the "
    "tolerance), but our estimate is outside the band; "
    "differs: otherwise (including a small effect of ours whose interval reaches into the no-effect band).")


@dataclass(frozen=True)
class Claim:
    """A published value, and which of our values tests it."""

    id: str                  # dotted, starts with the study id
    cite: str                # BibTeX key of the seed
    where: str               # place in the source, e.g. 'Table 1'
    statement: str           # what was measured, in words
    published: float
    unit: str                # '%' or a physical unit or '×'
    no_effect: float         # the value that means "no effect" in `unit`
    tolerance: float         # half-width of the agreement band, in `unit`
    tolerance_basis: str     # why this tolerance (printed with the claim)
    value_key: str           # our Value that tests it (results.json key)
    stand_in: str            # which of our configurations stands for the source's system
    published_text: str = "" # the source's own wording when it is not a number ('No impact')
    label: str = ""          # the seed claim it tests as the issues number them ('C001-3'); "": the id's last part
    published_digits: int | None = None   # decimals of `published` as the seed gives it (None: published_decimals)

    def __post_init__(self) -> None:
        if not SEED_LABEL_RE.fullmatch(self.seed_label):
            raise ValueError(f"claim {self.id!r}: label {self.seed_label!r} is not a seed claim's (want e.g. "
                             "'C001-3' or 'C000-1b'; give label= when the id does not end in one)")

    @property
    def seed_label(self) -> str:
        """The seed claim this row tests (the claims table's first column; several rows may test one)."""
        return self.label or self.id.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Outcome:
    claim: Claim
    ours: Value

    @property
    def verdict(self) -> Verdict:
        return verdict(self.claim, self.ours)

    def to_json(self) -> dict[str, Any]:
        c = self.claim
        return {"id": c.id, "cite": c.cite, "where": c.where, "statement": c.statement,
                "published": c.published, "published_text": c.published_text, "unit": c.unit,
                "no_effect": c.no_effect, "tolerance": c.tolerance, "tolerance_basis": c.tolerance_basis,
                "value_key": c.value_key, "stand_in": c.stand_in, "label": c.seed_label,
                "published_digits": c.published_digits, "ours": self.ours.to_json(),
                "verdict": self.verdict}


def verdict(claim: Claim, ours: Value) -> Verdict:
    if ours.n < 2 or not ours.has_interval:
        return "inconclusive"
    lo, hi = ours.low, ours.high
    tol, p, zero = claim.tolerance, claim.published, claim.no_effect
    if (hi - lo) / 2 > tol:
        # Too wide to show agreement; but an interval that lies wholly outside the band still excludes the
        # published value (seed 004's 'overhead' against our 378 [354, 403] % is not in doubt), so it goes on to
        # the direction test below. Agreement needs precision, a difference only needs the band excluded.
        if lo <= p + tol and hi >= p - tol:
            return "inconclusive"
    elif p - tol <= ours.value <= p + tol:
        return "agrees"
    # The tolerance says what counts as an effect on the claim's own scale (seed 001's ±15 pp separates 'no
    # impact' from 'a third'), for the published value and for ours alike: an interval of ours that reaches into
    # the no-effect band is not an effect in the published direction, however small its lower end.
    published_effect = p - zero
    if abs(published_effect) > tol:
        if published_effect > 0 and lo > zero + tol:
            return "same direction"
        if published_effect < 0 and hi < zero - tol:
            return "same direction"
    return "differs"


def outcome(claim: Claim, values: dict[str, Value]) -> Outcome:
    try:
        return Outcome(claim, values[claim.value_key])
    except KeyError:
        raise KeyError(f"claim {claim.id!r} tests value {claim.value_key!r}, which the analysis did not produce") \
            from None


def from_json(row: dict[str, Any]) -> Outcome:
    """An Outcome from a results.json `claims` row."""
    fields = {k: row[k] for k in ("id", "cite", "where", "statement", "published", "unit", "no_effect",
                                   "tolerance", "tolerance_basis", "value_key", "stand_in", "published_text")}
    fields["label"] = row.get("label", "")     # results.json written before claims carried labels has none
    fields["published_digits"] = row.get("published_digits")
    try:
        claim = Claim(**fields)
    except ValueError as exc:
        raise ConfigError("results.json", f"claims[{row['id']}].label", str(exc)) from None
    return Outcome(claim, Value.from_json(row["ours"]))


def published_decimals(c: Claim) -> int:
    """Decimals the paper prints `c.published` with: the claim's own (a time the seed's log gives to the
    millisecond), else three significant digits: a ratio the seed's own numbers give (110 + 100 of 510 + 250 =
    27.6 %) is not printed to more places than they have."""
    if c.published_digits is not None:
        return c.published_digits
    if not math.isfinite(c.published) or c.published == 0:
        return 0
    return max(0, 2 - math.floor(math.log10(abs(c.published))))


def published_str(c: Claim) -> str:
    if c.published_text:
        return c.published_text
    num = f"{c.published:.{published_decimals(c)}f}" if not math.isnan(c.published) else "n/a"
    return f"{num} {c.unit}".strip()


def ours_str(o: Outcome) -> str:
    return f"{o.ours.formatted_ci()} {o.claim.unit}".strip()
