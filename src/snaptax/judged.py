"""A run's claims judged by the pre-registration it was measured under (issue 47.2).

A study's analysis states each claim it tests (snaptax.claims.Claim: the published value, the value of ours that
tests it, a tolerance and its basis). The verdicts the paper and `snaptax claims` print take from the registration
in force when the run was measured (the run's manifest records its file and hash; snaptax.registration) what it
fixes before the data: the published value, the no-effect value, the direction of a statement without a number, the
tolerance by the one rule (registration.TOLERANCE_RULE) and the role:

  registered, judged        judged with the registered published value and tolerance;
  registered, calibration   not judged ("calibration") in a run that measured its stand-in at the operating point
                            inferred from it (the run's parameters record it: snaptax.operatingpoints.used_in); a
                            run at a preset setting rests on no inference from it, so there it is judged like any
                            other statement;
  registered, unjudged      not judged, for the registration's reason;
  not registered            not judged ("not registered"): the rule judges only what was declared before the data;
  registered otherwise      not judged when the analysis tests another quantity than the registered statement
                            (a number against a direction, or the other direction).

A run measured before any registration is judged by the newest one and marked as not pre-registered (judged, never
refused). Pure given the registration and the stand-ins the run measured at inferred operating points; the caller
reads them.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

from . import operatingpoints, registration
from .claims import Claim, Outcome, Role
from .registration import Registered, Registration
from .values import DerivedValues

NOT_REGISTERED = "not registered"
OTHER_QUANTITY = "the analysis tests another quantity than the registered statement"


def in_force(recorded: dict[str, str] | None) -> tuple[Registration | None, bool]:
    """The registration a run was measured under (found by its hash) and True; for a run measured before any
    registration, or whose registration file is no longer committed, the newest one and False (not pre-registered)."""
    if recorded:
        found = registration.by_hash(recorded.get("sha256", ""))
        if found is not None:
            return found, True
    return registration.newest(), False


def _basis(r: Registered) -> str:
    precision = f"precision {r.precision:g}" + (f" ({r.precision_basis})" if r.precision_basis else "")
    return (f"registered: the larger of the seed's {precision} and the smallest effect that matters "
            f"({r.smallest_effect:g})")


def _matches(c: Claim, r: Registered) -> bool:
    """The analysis tests the registered statement: both give a number, or both the same direction."""
    if r.direction:
        return c.direction_only and (c.direction or (1 if c.published > c.no_effect else -1)) == r.direction
    return not c.direction_only


def claim(c: Claim, reg: Registration | None, pre_registered: bool, inferred: Iterable[str] = ()) -> Claim:
    """`c` as the registration judges it (the module's docstring); `inferred`: the stand-ins the run measured at
    their inferred operating points."""
    c = dataclasses.replace(c, registration=reg.file if reg else "", pre_registered=pre_registered and reg is not None)
    r = reg.claims.get(c.id) if reg else None
    if r is None:
        return dataclasses.replace(c, unjudged=NOT_REGISTERED)
    if r.role == "unjudged":
        return dataclasses.replace(c, unjudged=r.reason or "registered as not judged")
    if not _matches(c, r):
        return dataclasses.replace(c, unjudged=OTHER_QUANTITY)
    role: Role = "calibration" if r.role == "calibration" and r.stand_in in set(inferred) else "judged"
    published = r.published if math.isfinite(r.published) else c.published
    return dataclasses.replace(c, published=published, no_effect=r.no_effect, tolerance=r.tolerance,
                               tolerance_basis=_basis(r), role=role, direction=r.direction or c.direction)


def outcomes(found: Sequence[Outcome], reg: Registration | None, pre_registered: bool,
             inferred: Iterable[str] = ()) -> list[Outcome]:
    """One run's outcomes with their claims as the registration judges them (unadjusted: claims.adjusted comes
    after, over every run of the table)."""
    inferred = tuple(inferred)
    return [dataclasses.replace(o, claim=claim(o.claim, reg, pre_registered, inferred), family_verdict=None)
            for o in found]


def operating_points_of(derived: DerivedValues) -> str:
    """The inferred operating points a run measured at, as its run value records them (analysis.run_values writes
    operatingpoints.RUN_VALUE, operatingpoints.shown's text: 'none' for none, also for a run analysed before the
    value existed)."""
    v = derived.values.get(f"{derived.study}.run.{operatingpoints.RUN_VALUE}")
    return v.text if v is not None and v.text else operatingpoints.NONE


def inferred_in(derived: DerivedValues) -> tuple[str, ...]:
    """The stand-ins a run measured at their inferred operating points (operating_points_of's names)."""
    text = operating_points_of(derived)
    return () if text == operatingpoints.NONE else tuple(item.split("=")[0] for item in text.split(","))


def for_run(found: Sequence[Outcome], recorded: dict[str, str] | None,
            inferred: Iterable[str] = ()) -> list[Outcome]:
    """One run's outcomes judged by the registration its manifest recorded (`recorded`; in_force finds it)."""
    return outcomes(found, *in_force(recorded), inferred)


__all__ = ["NOT_REGISTERED", "OTHER_QUANTITY", "in_force", "claim", "outcomes", "operating_points_of", "inferred_in",
           "for_run"]
