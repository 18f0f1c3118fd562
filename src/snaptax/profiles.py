"""Profiles: how much measuring a run does. The same studies at three scales.

  smoke  CI and nbval: every study end to end in a few minutes; numbers are not paper-grade.
  quick  the default: minutes per study; what the committed data/ and the paper are built from.
  full   paper-grade: long runs, more repeats, larger disks (hours; see README).

A run selection names, for reading only (render, claims, site), which profile's newest run stands for each
study: `paper` is each study's paper-grade (full) run where it has one and its quick run otherwise, so the paper
moves to paper-grade data study by study as those runs are measured (a full run takes hours; issue 49) and says
which study rests on which.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from .errors import ConfigError


@dataclass(frozen=True)
class Profile:
    """Scale knobs shared by all studies. Sizes in bytes, times in seconds."""

    name: str
    repeats: int            # repetitions of each measurement point (spread is reported across them)
    runtime_s: float        # fio time-based runtime per measurement
    ramp_time_s: float      # fio ramp_time excluded from the statistics
    disk_size: int          # size of the volume under test


PROFILES: dict[str, Profile] = {
    "smoke": Profile("smoke", repeats=1, runtime_s=2, ramp_time_s=0, disk_size=256 << 20),
    "quick": Profile("quick", repeats=2, runtime_s=5, ramp_time_s=1, disk_size=1 << 30),
    "full": Profile("full", repeats=3, runtime_s=30, ramp_time_s=5, disk_size=4 << 30),
}
DEFAULT = "quick"
# selection -> the profiles whose newest run stands for a study, first choice first
SELECTIONS: dict[str, tuple[str, ...]] = {"paper": ("full", "quick")}


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigError("profile", "PROFILE", f"unknown profile {name!r} (one of: {', '.join(PROFILES)})") from None


def run_profiles(name: str) -> tuple[str, ...]:
    """The profiles whose runs `name` reads, first choice first: a profile itself, or a selection's profiles.
    Raises one ConfigError line for a name that is neither."""
    if name in SELECTIONS:
        return SELECTIONS[name]
    if name in PROFILES:
        return (name,)
    raise ConfigError("profile", "PROFILE", f"unknown profile {name!r} (one of: {', '.join(PROFILES)}; or, to read "
                      f"runs only, {', '.join(SELECTIONS)})")


def runs_words(name: str) -> str:
    """Which runs `name` reads, in words: 'the newest quick runs', or a selection's choice."""
    if name in SELECTIONS:
        first, *rest = SELECTIONS[name]
        return f"each study's newest {first} run, else its newest {' or '.join(rest)} run ('{name}')"
    return f"the newest {name} runs"


Scale = TypeVar("Scale")


def study_scale(scales: dict[str, Scale], profile: Profile, study: str, noun: str) -> Scale:
    """A study's own scale at a profile (its SCALES table, keyed by profile name); an unknown profile is one
    ConfigError line naming the study and its kind of scale (`noun`, e.g. 'engine scale')."""
    try:
        return scales[profile.name]
    except KeyError:
        raise ConfigError(f"{study} study", "profile", f"no {noun} for profile {profile.name!r} "
                          f"(one of: {', '.join(scales)})") from None
