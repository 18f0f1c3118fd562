"""Whether an emulated measurement kept time: the emulator's lateness against its own schedule, from the counters
a measurement recorded (differences over it), and the hypervisor's share of the CPU.
"""
from __future__ import annotations

import math

# an emulated measurement is flagged when the emulator released requests later than its own schedule by more
# than this fraction of the mean service time, on average: its timing is then the host's, not the model's
LATENESS_LIMIT = 0.02

# the steal share from which a flagged run's line names the hypervisor: below it, steal is rounding
STEAL_NOTABLE = 0.01


def steal_fraction(deltas: dict[str, float]) -> float:
    """The share of the machine's CPU time the hypervisor took over a measurement: steal / (busy + idle + steal)
    (dimensionless; nan when the CPU times were not recorded, as in runs made before 2026-11-27)."""
    busy, idle, steal = (deltas.get(f"machine.cpu_{k}_s") for k in ("busy", "idle", "steal"))
    if busy is None or idle is None or steal is None or not busy + idle + steal:
        return math.nan
    return steal / (busy + idle + steal)


def emulator_lateness_s(deltas: dict[str, float]) -> float:
    """Mean lateness (s) of the emulator's releases against its own schedule, from counter increases
    (emulator.release_late_s_sum / emulator.released; nan when not emulated)."""
    if "emulator.released" not in deltas or "emulator.release_late_s_sum" not in deltas:
        return math.nan
    released = deltas["emulator.released"]
    return deltas["emulator.release_late_s_sum"] / released if released else math.nan


def service_time_s(deltas: dict[str, float]) -> float:
    """Mean time (s) a member drive was busy per request it served, from counter increases (nan without member
    counters): the rig device's members, and a snapshot device's (snapdev.*) when an engine keeps its snapshots
    on one."""
    busy = sum(v for n, v in deltas.items() if n.endswith(".busy_s"))
    served = sum(deltas.get(n, 0.0) for n in ("host.member_reads", "host.member_writes", "snapdev.member_reads",
                                              "snapdev.member_writes"))
    return busy / served if served and busy else math.nan


def lateness_fraction(deltas: dict[str, float]) -> float:
    """The emulator's mean lateness over the mean member service time (dimensionless; nan when either is
    undefined), from counter increases over a measurement."""
    late, service = emulator_lateness_s(deltas), service_time_s(deltas)
    return late / service if math.isfinite(late) and math.isfinite(service) and service > 0 else math.nan
