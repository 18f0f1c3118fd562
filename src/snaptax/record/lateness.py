"""When an emulated measurement is too late to trust: the lateness limits per device class, declared here once.

The emulated spindles reply to each command when the model says it completes; a reply that leaves later than
that (the emulator's lateness, emulator.release_late_s_sum / emulator.released over a measurement) makes the
device look slower than the model. A measurement is flagged when its mean lateness exceeds its device class's
limit, stated against the time the class's commands take:

  mechanical   mean member service time (busy seconds per member command) of 1 ms or more: every 7.2K, 10K
               and 15K drive and every array of them (a random command takes 2-15 ms). A drive serves one command
               at a time, so its busy time per command is what one command takes. Limit: 2 % of it (100 µs on a
               5 ms command) — what the calibration's seek fit and the studies' effects of a few per cent
               can stand; the limit the project has used since its first emulated runs.
  flash        below 1 ms: an SSD, or a tiered pool whose commands land mostly on its SSD tier. An SSD serves
               `channels` commands at once, so its busy time per command (~20 µs: the inverse of its throughput)
               is several times shorter than the time each command takes (~180 µs for a 4 KiB read on
               rigs/spindles/ssd_sas.yaml); 2 % of the former is 0.4 µs, below the timer and wake-up resolution
               of any emulator. The limit is stated against the command's own time in the model (submission to
               completion, per released command: emulator.model_s_sum / emulator.released): 5 % of it, the
               fraction by which lateness lengthens the commands the measurement timed, and the ±5 % the flash
               tier's accuracy is held to in `make bench` (emulator_plugin_accuracy_flash_tier).

The class follows the measurement's own counters (its member service time), not the device's name: a tiered pool
is judged as flash while its hot data is served from flash and as mechanical while its disks serve it. Only the
compiled emulator (spindle_plugin.c, since 2026-11-28) counts the model time per release; a measurement without it
(the Python plugin's runs) is judged as mechanical, by the limit it was published under.

Also the hypervisor's share of the CPU over a measurement (steal), which a flagged run's line names.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class LatenessLimit:
    device_class: str
    fraction: float        # the largest mean lateness allowed, as a fraction of `reference`
    reference: str         # what the lateness is compared with, in words


MECHANICAL = LatenessLimit("mechanical", 0.02, "the mean member service time")
FLASH = LatenessLimit("flash", 0.05, "the mean command time in the model")
LIMITS = (MECHANICAL, FLASH)
FLASH_BELOW_S = 1e-3      # member service time under which a measurement is judged as flash
# the mechanical drives' limit: the one the paper prints as paper.lateness_limit_pct
LATENESS_LIMIT = MECHANICAL.fraction

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


def command_time_s(deltas: dict[str, float]) -> float:
    """Mean time (s) a released command took in the model, submission to completion (emulator.model_s_sum /
    emulator.released, counted by the compiled plugin); nan without them."""
    released, model = deltas.get("emulator.released"), deltas.get("emulator.model_s_sum")
    return model / released if released and model is not None else math.nan


def lateness_fraction(deltas: dict[str, float]) -> float:
    """The emulator's mean lateness over the mean member service time (dimensionless; nan when either is
    undefined), from counter increases over a measurement: the figure every study prints as its lateness."""
    late, service = emulator_lateness_s(deltas), service_time_s(deltas)
    return late / service if math.isfinite(late) and math.isfinite(service) and service > 0 else math.nan


def device_class(deltas: dict[str, float]) -> LatenessLimit | None:
    """The measurement's class by its member service time (None when it has none: not emulated); mechanical when
    the emulator did not count its model time (command_time_s)."""
    service = service_time_s(deltas)
    if not math.isfinite(service):
        return None
    return FLASH if service < FLASH_BELOW_S and math.isfinite(command_time_s(deltas)) else MECHANICAL


def lateness_share(deltas: dict[str, float]) -> float:
    """The mean lateness as a fraction of its class's reference (nan when either is undefined): what the class's
    limit bounds."""
    cls, late = device_class(deltas), emulator_lateness_s(deltas)
    if cls is None or not math.isfinite(late):
        return math.nan
    ref = service_time_s(deltas) if cls is MECHANICAL else command_time_s(deltas)
    return late / ref if math.isfinite(ref) and ref > 0 else math.nan


def flagged(deltas: dict[str, float]) -> bool:
    """True when the measurement's mean lateness exceeds its class's limit."""
    cls, share = device_class(deltas), lateness_share(deltas)
    return cls is not None and math.isfinite(share) and share > cls.fraction


def limits_text() -> str:
    """The limits in words, for the lines a run prints."""
    return "; ".join(f"{c.device_class} {c.fraction * 100:.0f} % of {c.reference}" for c in LIMITS)
