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

Verdict = Literal["agrees", "differs", "inconclusive", "not judged", "calibration"]
VERDICTS: tuple[Verdict, ...] = ("agrees", "differs", "inconclusive", "not judged", "calibration")
# the levels of the rule: agreement by two one-sided tests at ALPHA each (the 90 % interval), a difference by the
# 95 % interval (one-sided ALPHA / 2); Holm's adjustment within each seed's family
ALPHA = 0.05

# Where our value comes from: a measurement of the stand-in (a mean over repeats, a paired ratio, a measured rate
# scaled by a size), or a model's prediction (a fitted model evaluated where the harness cannot measure, e.g. the
# tiered pool at its SSD tier's own speed). A model row is judged by the same rule, but its verdict checks the
# model against the published value: it is not a reproduced measurement, and the paper says so wherever it prints one.
Basis = Literal["measured", "model"]
BASES: tuple[Basis, ...] = ("measured", "model")
MODEL_MARK = "(model)"      # after our value in the claims table and Table 1
# A claim's role: judged (a held-out test of the stand-in), or calibration (the seed statement the stand-in's
# operating point is inferred from: issue 46's stand-in record; it cannot also test it)
Role = Literal["judged", "calibration"]
ROLES: tuple[Role, ...] = ("judged", "calibration")

# The words a claim's published_text carries when the seed states a direction without a number: its `published`
# is then a placeholder (the smallest effect the tolerance resolves), not the seed's size, so no ratio of effects
# is formed against it.
NO_NUMBER = "no number"

VERDICT_RULE = (
    "Each claim is judged on our value's replicates, independent runs (a fresh engine, device and fio process "
    "each); a value with fewer than three, or whose samples come from within one run, is not judged. "
    "A claim with a published number is judged against its band, the published value ± its tolerance (declared "
    "before the runs in the pre-registration; for a value in % in percentage points, pp): it agrees when our 90 % "
    "interval lies wholly inside the band (two one-sided tests at α = 0.05 each), differs when our 95 % interval lies "
    "wholly outside it, and is inconclusive otherwise. A claim that states only a direction is judged against the "
    "smallest effect that matters (its tolerance) beyond no effect: it agrees when our 90 % interval lies wholly "
    "beyond it on the claimed side, differs when our 95 % interval lies wholly on the other side of it (no effect or "
    "the opposite effect), and is inconclusive otherwise. Within each seed's claims, Holm's step-down adjustment of "
    "the tests' p-values decides both agreement and difference. A statement used to infer a stand-in's operating "
    "point calibrates it and is not judged (calibration). A row whose value is a model's prediction rather than a "
    "measurement (marked model) is judged by the same rule; its verdict checks the model, not a reproduced "
    "measurement. Beside each verdict we give our effect as a share of the "
    "published one, (ours − no effect) ÷ (published − no effect), with its interval.")


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
    role: Role = "judged"      # calibration: the statement infers a stand-in's operating point and is not judged
    direction: int = 0         # a direction without a number: +1 above no effect, -1 below (0: from `published`)
    # set when the claim is judged by a registration (snaptax.judged), never by an analysis:
    unjudged: str = ""         # why it is not judged whatever the data (not registered, registered as unjudged ...)
    registration: str = ""     # the registration file that judged it ('' : none)
    pre_registered: bool = False   # that registration was in force when the run was measured

    def __post_init__(self) -> None:
        if not SEED_LABEL_RE.fullmatch(self.seed_label):
            raise ValueError(f"claim {self.id!r}: label {self.seed_label!r} is not a seed claim's (want e.g. "
                             "'C001-3' or 'C000-1b'; give label= when the id does not end in one)")
        if self.basis not in BASES:
            raise ValueError(f"claim {self.id!r}: basis {self.basis!r} is not one of {', '.join(BASES)}")
        if self.role not in ROLES:
            raise ValueError(f"claim {self.id!r}: role {self.role!r} is not one of {', '.join(ROLES)}")

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
    def direction_only(self) -> bool:
        """The seed states a direction without a number: judged against the smallest effect that matters (its
        tolerance) beyond no effect, never against a placeholder value."""
        return self.direction != 0 or NO_NUMBER in self.published_text

    @property
    def seed(self) -> str:
        """The seed the claim is from ('000' … '004'): its family for Holm's adjustment."""
        return self.seed_label[1:4]

    @property
    def seed_label(self) -> str:
        """The seed claim this row tests (the claims table's first column; several rows may test one)."""
        return self.label or self.id.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Outcome:
    claim: Claim
    ours: Value
    family_verdict: Verdict | None = None    # the verdict within its seed's family (Holm), once adjusted

    @property
    def verdict(self) -> Verdict:
        """The family's verdict when adjusted (adjusted()), else the claim's own (unadjusted)."""
        return self.family_verdict or verdict(self.claim, self.ours)

    @property
    def same_direction(self) -> bool | None:
        """The secondary column: ours lies on the published effect's side of no effect (never counted)."""
        return same_direction(self.claim, self.ours)

    @property
    def judgeable(self) -> str:
        """'' when the claim can be judged on our value, else why not (the claim's registration, claims.judgeable)."""
        return self.claim.unjudged or judgeable(self.ours)

    def to_json(self) -> dict[str, Any]:
        c = self.claim
        return {"id": c.id, "cite": c.cite, "where": c.where, "statement": c.statement,
                "published": c.published, "published_text": c.published_text, "unit": c.unit,
                "no_effect": c.no_effect, "tolerance": c.tolerance, "tolerance_basis": c.tolerance_basis,
                "value_key": c.value_key, "stand_in": c.stand_in, "label": c.seed_label,
                "published_digits": c.published_digits, "basis": c.basis, "provisional": c.provisional,
                "role": c.role, "direction": c.direction,
                "ours": self.ours.to_json(), "verdict": self.verdict}

    @property
    def effect_ratio(self) -> Value | None:
        return effect_ratio(self.claim, self.ours)


def tests(claim: Claim, ours: Value) -> tuple[float, float]:
    """The two p-values the rule decides on: (agreement, difference). Agreement: two one-sided tests that our value
    lies in the band (a number), or one that it lies beyond the smallest effect that matters on the claimed side (a
    direction); difference: that it lies outside the band on the estimate's side, or on the other side of that
    smallest effect. nan, nan when the value cannot be judged (judgeable)."""
    est = ours.estimate
    if judgeable(ours) or est is None:
        return math.nan, math.nan
    c = claim
    if c.direction_only:
        side = c.direction or (1 if c.published > c.no_effect else -1)
        bound = c.no_effect + side * c.tolerance
        return est.p_beyond(bound, side), est.p_beyond(bound, -side)
    low, high = c.published - c.tolerance, c.published + c.tolerance
    return est.p_within(low, high), est.p_outside(low, high)


def judgeable(ours: Value) -> str:
    """'' when our value can be judged, else why not: it rests on fewer than MIN_REPLICATES independent runs, or
    on samples within one run (per-second samples, batch means of one timeline, one run's counters)."""
    from .inference import MIN_REPLICATES

    est = ours.estimate
    if est is None or not ours.independent:
        return "not independent runs"
    if est.n < MIN_REPLICATES or not est.defined:
        return f"n < {MIN_REPLICATES}"
    return ""


def decide(p_agree: float, p_differ: float) -> Verdict:
    """The verdict from the (adjusted) p-values: agrees below ALPHA, differs below ALPHA / 2, else inconclusive."""
    if math.isfinite(p_agree) and p_agree < ALPHA:
        return "agrees"
    if math.isfinite(p_differ) and p_differ < ALPHA / 2:
        return "differs"
    return "inconclusive"


def verdict(claim: Claim, ours: Value) -> Verdict:
    """The verdict on one claim by itself (unadjusted; the paper's are adjusted within each seed's family:
    family_verdicts)."""
    if claim.role == "calibration":
        return "calibration"
    if claim.unjudged or judgeable(ours):
        return "not judged"
    return decide(*tests(claim, ours))


def adjusted(outcomes: list[Outcome]) -> list[Outcome]:
    """The outcomes with their family verdicts (family_verdicts): what the paper and `snaptax claims` print."""
    import dataclasses

    return [dataclasses.replace(o, family_verdict=v) for o, v in zip(outcomes, family_verdicts(outcomes),
                                                                      strict=True)]


def family_verdicts(outcomes: list[Outcome]) -> list[Verdict]:
    """The verdicts of the paper: each seed's judged claims form a family, and Holm's step-down adjustment of their
    agreement p-values, and separately of their difference p-values, decides (in the order given)."""
    from .inference import holm

    out: list[Verdict] = [verdict(o.claim, o.ours) for o in outcomes]
    for seed in dict.fromkeys(o.claim.seed for o in outcomes):
        idx = [i for i, o in enumerate(outcomes) if o.claim.seed == seed and out[i] not in ("not judged",
                                                                                          "calibration")]
        ps = [tests(outcomes[i].claim, outcomes[i].ours) for i in idx]
        agree, differ = holm([p[0] for p in ps]), holm([p[1] for p in ps])
        for i, a, d in zip(idx, agree, differ, strict=True):
            out[i] = decide(a, d)
    return out


def same_direction(claim: Claim, ours: Value) -> bool | None:
    """The secondary column: our 95 % interval lies on the published effect's side of no effect (None when the
    published value is no effect or ours has no interval). Never counted as agreement."""
    if not ours.has_interval or claim.published == claim.no_effect:
        return None
    return ours.low > claim.no_effect if claim.published > claim.no_effect else ours.high < claim.no_effect


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
    fields["role"] = row.get("role", "judged")
    fields["direction"] = int(row.get("direction", 0))
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
