"""Power planned, not hoped: how many independent replicates each judged claim needs.

For a claim with a published number, two one-sided tests show agreement when the 90 % interval lies in the band;
with the claim's true value at the published one (the case the test must be able to confirm), the power at n
replicates is inference.tost_power on the pivot scale: the spread between replicates measured in the newest run
(sd = se·√n), and the margin from the published value to the nearer end of the band (the band is asymmetric on a
log scale). For a direction-only claim, the one-sided test beyond the smallest effect that matters is powered at an
effect the size our newest run measured. A claim whose newest value has no pivot (not independent replicates yet)
has no spread to plan from, and says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as sps

from .claims import Outcome
from .inference import MIN_REPLICATES, increasing, inverse, tost_replicates

POWER = 0.8


@dataclass(frozen=True)
class PowerLine:
    claim: str               # the seed claim (label) and id
    n_now: int               # the newest run's replicates
    sd: float                # between replicates, on the pivot scale (nan: none measured)
    needed: int | None       # replicates for POWER (None: none within reach, or no spread to plan from)
    why: str                 # '' or why there is no number

    def line(self) -> str:
        if self.needed is None:
            return f"{self.claim}: {self.why}"
        return (f"{self.claim}: {self.needed} replicates for {POWER:.0%} power (newest run: n = {self.n_now}, "
                f"spread {self.sd:.3g} on its pivot scale)")


def _one_sided_replicates(sd: float, distance: float, alpha: float = 0.05, n_max: int = 200) -> int | None:
    """The fewest replicates whose one-sided t test at alpha detects a true distance beyond the bound with POWER
    (noncentral t)."""
    if distance <= 0:
        return None
    for n in range(MIN_REPLICATES, n_max + 1):
        dof = n - 1
        ncp = distance / (sd / math.sqrt(n))
        if float(sps.nct.sf(sps.t.ppf(1 - alpha, dof), dof, ncp)) >= POWER:
            return n
    return None


def plan_line(o: Outcome) -> PowerLine:
    """How many replicates the claim needs, from its newest value's spread (see the module's docstring)."""
    c, est = o.claim, o.ours.estimate
    name = c.id
    if c.unjudged:
        return PowerLine(name, o.ours.n, math.nan, None, f"not judged whatever the data: {c.unjudged}")
    if c.role == "calibration":
        return PowerLine(name, o.ours.n, math.nan, None, "calibrates a stand-in (not judged): its interval sizes "
                         "the operating point, not a verdict")
    if est is None or not est.defined or not est.independent:
        return PowerLine(name, o.ours.n, math.nan, None, "no spread between independent replicates measured yet")
    sd = est.se * math.sqrt(est.n)
    if sd == 0:
        return PowerLine(name, est.n, 0.0, MIN_REPLICATES, "")
    if c.direction_only:
        side = c.direction or (1 if c.published > c.no_effect else -1)
        bound = inverse(est.scale, c.no_effect + side * c.tolerance)
        distance = (est.pivot - bound) * side * (1 if increasing(est.scale) else -1)
        need = _one_sided_replicates(sd, distance)
        return PowerLine(name, est.n, sd, need, "" if need else "the measured effect does not reach beyond the "
                         "smallest effect that matters: no n confirms it")
    centre = inverse(est.scale, c.published)
    ends = [inverse(est.scale, c.published - c.tolerance), inverse(est.scale, c.published + c.tolerance)]
    margin = min(abs(centre - e) for e in ends if math.isfinite(e)) if any(map(math.isfinite, ends)) else math.inf
    need = tost_replicates(sd, margin, POWER)
    return PowerLine(name, est.n, sd, need, "" if need else "the tolerance is too narrow for this spread")


__all__ = ["POWER", "PowerLine", "plan_line"]
