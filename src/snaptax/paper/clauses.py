"""Sentences whose wording depends on what a run found, generated from its values (paper.clause.*), for the places
where the quick and the paper-grade runs come out differently (a fixed sentence would be checked by a
prose.Fact and then be wrong for one of them)."""
from __future__ import annotations

import math
from collections.abc import Mapping

from ..values import Value


def saturated_iterative(values: Mapping[str, Value]) -> str:
    """Whether the saturated iterative deletion converged, and where its writer stood against the critical rate r*
    (both from the lifecycle run this build uses). Plain text: the macros escape it."""
    def get(key: str) -> float:
        return values[key].value if key in values else math.nan

    converged = get("lifecycle.saturated.iterative.converged")
    writer = get("lifecycle.saturated.iterative.writer_iops")
    critical = get("lifecycle.model.critical_rate")
    if not math.isfinite(converged):
        return "the saturated iterative deletion has no outcome in this build's runs"
    if converged == 1:
        iterations = get("lifecycle.saturated.iterative.iterations")
        stun = get("lifecycle.saturated.iterative.stun_s")
        return (f"the saturated iterative deletion converged, after {iterations:.0f} iterations and a final stun of "
                f"{stun:.1f} s")
    side = "below" if math.isfinite(writer) and math.isfinite(critical) and writer < critical else "not below"
    why = (" (the model's outcome weighs the threshold against the size the helper tends to as well)"
           if side == "below" else "")
    return f"the saturated iterative deletion did not converge, its guest writing {side} the estimate of r*{why}"


def clause_values(values: Mapping[str, Value]) -> list[Value]:
    """paper.clause.*: the generated sentences (each says so when the run lacks the values it reads)."""
    return [Value("paper.clause.saturated_iterative", text=saturated_iterative(values))]


__all__ = ["saturated_iterative", "clause_values"]
