"""Published claims of the seed studies (cited reference values) and verdicts on our measurements.

A published number appears in the paper only through a Claim, with its bibliography key and its place in the
source; our number is a Value from data. Every claim is an effect against its no-effect value (a loss against
0 %, a ratio in percent against 100 %, a factor against 1), and the verdict is made on the 95 % interval of our
value — never on a single number or the min–max of repeats. The rule is stated once, here, and printed in the paper.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from .errors import ConfigError
from .values import Value

# C<seed>-<number>[<letter>]: the numbering of the seeds' claims in the issues (seed 001's C001-1 … C001-7)
SEED_LABEL_RE = re.compile(r"C00[0-4]-[0-9]+[a-z]?")

Verdict = Literal["agrees", "same direction", "differs", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = ("agrees", "same direction", "differs", "inconclusive")

# Where our value comes from: a measurement of the stand-in (a mean over repeats, a paired ratio, a measured rate
# scaled by a size), or a model's prediction (a fitted model evaluated where the harness cannot measure, e.g. the
# tiered pool at its SSD tier's own speed). A model row is judged by the same rule, but its verdict checks the
# model against the published value: it is not a reproduced measurement, and the paper says so wherever it prints one.
Basis = Literal["measured", "model"]
BASES: tuple[Basis, ...] = ("measured", "model")
MODEL_MARK = "(model)"      # after our value in the claims table and Table 1

# The words a claim's published_text carries when the seed states a direction without a number: its `published`
# is then a placeholder (the smallest effect the tolerance resolves), not the seed's size, so no ratio of effects
# is formed against it.
NO_NUMBER = "no number"

VERDICT_RULE = (
    "Each claim is an effect against its no-effect value (0 % for a loss, 100 % for a ratio, 1 for a factor), "
    "and is judged on the 95 % confidence interval of our value from its repeats, against a tolerance band "
    "(published value ± tolerance, whose basis each claim states; the tolerance is in the claim's unit, and for a "
    "value in % it is in percentage points, pp). "
    "inconclusive: fewer than two repeats, or the interval is wider than the band (half-width > tolerance) and "
    "overlaps it, so that it can neither show agreement nor exclude the published value; "
    "agrees: the interval is no wider than the band and our estimate lies within the band; "
    "same direction: the published value is an effect (farther than the tolerance from the no-effect value) and "
    "so is ours by the same measure, on the same side (our whole interval lies beyond the no-effect value ± the "
    "tolerance), but our estimate is outside the band; "
    "differs: otherwise (including a small effect of ours whose interval reaches into the no-effect band). "
    "A row whose value is a model's prediction rather than a measurement (marked model) is judged by the same rule; "
    "its verdict says whether the model, fed with what was measured, meets the published value, not that a "
    "measurement reproduced it.")


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
    value_key: str           # our Value that tests it (its key)
    stand_in: str            # which of our configurations stands for the source's system
    published_text: str = "" # the source's own wording when it is not a number ('No impact')
    label: str = ""          # the seed claim it tests as the issues number them ('C001-3'); "": the id's last part
    published_digits: int | None = None   # decimals of `published` as the seed gives it (None: published_decimals)
    basis: Basis = "measured"  # our value (value_key) is measured, or a model's prediction (BASES)
    provisional: str = ""      # why the row is provisional (a known bias of the run that measured it); "": it is not

    def __post_init__(self) -> None:
        if not SEED_LABEL_RE.fullmatch(self.seed_label):
            raise ValueError(f"claim {self.id!r}: label {self.seed_label!r} is not a seed claim's (want e.g. "
                             "'C001-3' or 'C000-1b'; give label= when the id does not end in one)")
        if self.basis not in BASES:
            raise ValueError(f"claim {self.id!r}: basis {self.basis!r} is not one of {', '.join(BASES)}")

    @property
    def is_model(self) -> bool:
        """Our value is a model's prediction, not a measurement."""
        return self.basis == "model"

    @property
    def published_is_effect(self) -> bool:
        """The seed gives a number (not only a direction) and it is an effect: farther than the tolerance from the
        no-effect value. Only such a claim has a ratio of effects (effect_ratio)."""
        return (NO_NUMBER not in self.published_text and math.isfinite(self.published)
                and abs(self.published - self.no_effect) > self.tolerance)

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
                "published_digits": c.published_digits, "basis": c.basis, "provisional": c.provisional,
                "ours": self.ours.to_json(), "verdict": self.verdict}

    @property
    def effect_ratio(self) -> Value | None:
        return effect_ratio(self.claim, self.ours)


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
    """An Outcome from a `claims` row of a run's derived values (values.DerivedValues.claims)."""
    fields = {k: row[k] for k in ("id", "cite", "where", "statement", "published", "unit", "no_effect",
                                   "tolerance", "tolerance_basis", "value_key", "stand_in", "published_text")}
    fields["label"] = row.get("label", "")     # rows written before claims carried labels have none
    fields["published_digits"] = row.get("published_digits")
    fields["basis"] = row.get("basis", "measured")          # rows written before claims carried a basis: measured
    fields["provisional"] = row.get("provisional", "")
    try:
        claim = Claim(**fields)
    except ValueError as exc:
        field_name = "basis" if fields["basis"] not in BASES else "label"
        raise ConfigError("derived values", f"claims[{row['id']}].{field_name}", str(exc)) from None
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


PERCENTAGE_POINTS = "pp"


def tolerance_unit(c: Claim) -> str:
    """The unit of a claim's tolerance: the claim's own, but percentage points (pp) for a value in %, since the
    band is published ± tolerance, a difference of percentages (±15 pp around 65 %, not ±15 % of it)."""
    return PERCENTAGE_POINTS if c.unit == "%" else c.unit


def tolerance_str(c: Claim) -> str:
    """'±15 pp', '±0.5 ×', '±66.8 s': the claim's tolerance with its unit (tolerance_unit)."""
    return f"±{c.tolerance:g} {tolerance_unit(c)}".strip()


EFFECT_RATIO_DIGITS = 2


def effect_ratio(claim: Claim, ours: Value) -> Value | None:
    """Our effect as a share of the published effect, both against the claim's no-effect value:

        r = (ours − no_effect) / (published − no_effect)

    1 is the published size, 0 no effect, between them a smaller effect in the published direction, above 1 a
    larger one, below 0 the other direction. Its interval is our interval's ends put through the same map (the
    published value has no interval; for a negative published effect the ends swap). None when the claim has no
    published effect (`Claim.published_is_effect`: within the tolerance of no effect, or a direction without a
    number), where the ratio means nothing. The verdict's "same direction" holds a 10 % and an 88 % loss alike; this
    says which."""
    c = claim
    if not c.published_is_effect:
        return None
    d = c.published - c.no_effect

    def f(x: float) -> float:
        return (x - c.no_effect) / d

    ends = sorted((f(ours.low), f(ours.high))) if ours.has_interval else [math.nan, math.nan]
    method = f"{ours.method}, ends mapped" if ours.method else ""
    return Value(f"claim.{c.id}.effect_ratio", f(ours.value), "", ends[0], ends[1], ours.n, EFFECT_RATIO_DIGITS,
                 None, method)


def tally(outcomes: Iterable[Outcome]) -> dict[Verdict, int]:
    """How many outcomes have each verdict, in the order of VERDICTS (zero counts included)."""
    outs = list(outcomes)
    return {v: sum(o.verdict == v for o in outs) for v in VERDICTS}


def tally_words(outcomes: Iterable[Outcome]) -> str:
    """'1 agrees, 2 differ' over the verdicts in the order of VERDICTS, zero counts left out ('' for none)."""
    plural = {"agrees": "agree", "differs": "differ"}
    return ", ".join(f"{n} {v if n == 1 else plural.get(v, v)}" for v, n in tally(outcomes).items() if n)


def seed_claims(outcomes: Iterable[Outcome]) -> list[str]:
    """The distinct seed claims (Claim.seed_label) the outcomes test, in first-seen order: several rows may test
    one seed claim (C001-1 on two jobs and at two chain lengths)."""
    return list(dict.fromkeys(o.claim.seed_label for o in outcomes))
