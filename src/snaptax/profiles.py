"""Profiles: how much measuring a run does. The same studies at three scales.

  smoke  CI and nbval: every study end to end in a few minutes; numbers are not paper-grade.
  quick  the default: minutes per study; what the committed data/ and the paper are built from.
  full   paper-grade: long runs, more repeats, larger disks (hours; see README).
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


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigError("profile", "PROFILE", f"unknown profile {name!r} (one of: {', '.join(PROFILES)})") from None


Scale = TypeVar("Scale")


def study_scale(scales: dict[str, Scale], profile: Profile, study: str, noun: str) -> Scale:
    """A study's own scale at a profile (its SCALES table, keyed by profile name); an unknown profile is one
    ConfigError line naming the study and its kind of scale (`noun`, e.g. 'engine scale')."""
    try:
        return scales[profile.name]
    except KeyError:
        raise ConfigError(f"{study} study", "profile", f"no {noun} for profile {profile.name!r} "
                          f"(one of: {', '.join(scales)})") from None
