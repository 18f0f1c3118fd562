"""Chunk copies as load: the rate of a closed loop on an array when a share of the guest's writes make the snapshot
engine copy a chunk first (dm-thin's break of sharing: read the old chunk, write it to a new one, then the write).

At a fixed number of outstanding guest I/Os the rate is inversely proportional to the array time a guest I/O costs
(Little's law). Relative to a phase without copies and with the volume in one region:

    r = s / (1 + k · w · c)                                            (dimensionless, rate over the initial rate)

    s   the layout's own ratio: the rate of the same load with the volume's data where it now lies, without copies,
        over the one-region rate (the emulated pool's span model; 1 for one region)
    w   the guest's writes per guest I/O (0 … 1; 0.2 for an 80 %-read load)
    c   the share of those writes that copied a chunk (0 … 1; measured from the device's reads beyond the volume's)
    k   the array time of one chunk copy, in units of the array time of one guest I/O of the initial phase

k is the one free parameter. Measured under the snapshot (where copies are the expected cost), it predicts any other
phase from that phase's own s and c, and the prediction can fail: a loss that the copies and the layout do not
account for (deferred I/O, a correlation between commands, anything else) puts the measured ratio outside the
predicted interval. Pure functions; intervals by the monotone transform of the measured ratio's interval.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


def ratio(s: float, w: float, c: float, k: float) -> float:
    """r = s / (1 + k·w·c): the rate over the initial rate (dimensionless) with layout ratio s, write share w, copied
    share of writes c and copy cost k (guest-I/O array times per copy)."""
    return s / (1 + k * w * c)


def copy_cost(r: float, s: float, w: float, c: float) -> float:
    """k = (s / r − 1) / (w·c): the copy cost that makes ratio(s, w, c, k) = r; nan when w·c or r is not positive."""
    if not (w * c > 0 and r > 0):
        return math.nan
    return (s / r - 1) / (w * c)


@dataclass(frozen=True)
class CopyCost:
    k: float
    k_low: float          # from the measured ratio's 95 % interval (a higher ratio: a cheaper copy)
    k_high: float
    s: float
    w: float
    c: float


def fit(r: float, r_low: float, r_high: float, s: float, w: float, c: float) -> CopyCost:
    """k with its interval from one phase's measured ratio (r in (0, 1], with interval [r_low, r_high]) and that
    phase's layout ratio s, write share w and copied share c."""
    return CopyCost(copy_cost(r, s, w, c), copy_cost(r_high, s, w, c), copy_cost(r_low, s, w, c), s, w, c)


def predict(cost: CopyCost, s: float, w: float, c: float) -> tuple[float, float, float]:
    """(ratio, low, high) for another phase with layout ratio s, write share w and copied share c, from the fitted
    cost's interval (a dearer copy: a lower ratio)."""
    return ratio(s, w, c, cost.k), ratio(s, w, c, cost.k_high), ratio(s, w, c, cost.k_low)


__all__ = ["ratio", "copy_cost", "CopyCost", "fit", "predict"]
