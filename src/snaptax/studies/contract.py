"""The study contract, checked in code: what each of a study's four modules offers the rest of the house.

A study's modules have one direction (CONTRIBUTING.md): plan → measure, plan → analyse → present. What Study, the
CLI and the paper call in each is a Protocol here, and studies/checked.py holds every registered study's four
modules typed as these, so that mypy checks each study against them (and tests/studies/test_registry.py that it
holds exactly the studies of REGISTRY). A module satisfies a Protocol by its module-level functions.

Measuring has one skeleton for every study, Study.run: the profile, root, the rig, the session (the measurement lock,
staging, publication in one rename), the loop devices a killed run left behind, and the published run it returns.
A study's measure.setup gives only what differs between studies, as a Setup.

A study too long for one measuring window may be measured in parts (issue 49.1): its plan module then also offers
parts(profile) and planned_seconds(profile, part=...) (PartedPlanModule), its measure.setup measures the part it is
given (the Setup's points and seconds are the part's), and the analysis reads a complete set of part runs as one
record (record.parts). A study without parts refuses a part (whole_study).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from ..errors import ConfigError
from ..profiles import Profile
from ..studyparams import StudyParameters

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..host.rig import Rig
    from ..record import RunRecord, RunSession

# bounds by name: analysis imports pandas (a third of a second), which the command line's help does not need
A = TypeVar("A", bound="Analysis")
A_co = TypeVar("A_co", bound="Analysis", covariant=True)
A_contra = TypeVar("A_contra", bound="Analysis", contravariant=True)


@dataclass(frozen=True)
class Setup:
    """What a study measures on a rig at a profile, as its measure.setup gives it to Study.run.

    parameters: the study's parameters record (manifest.parameters, read back only by its analysis);
    devices_used: the rig devices the run measures; planned_points, planned_seconds: the plan's fio runs and the run
    time it predicts (the progress line, the ETA and the artifact table's extrapolation: plan.planned_seconds), of
    the part when one is measured; measure: everything measured, run inside the session once it holds the lock;
    part_set: measuring a part, every part of the study on this rig at this profile (the set the run belongs to,
    recorded in its manifest); empty for a whole run.
    """

    parameters: StudyParameters
    devices_used: tuple[str, ...]
    planned_points: int
    planned_seconds: float
    measure: Callable[[RunSession], None]
    part_set: tuple[str, ...] = ()


class PlanModule(Protocol):
    """plan.py: what a run measures, as data (pure; no root). A study whose runs are one StudyPlan also has
    build_plan(profile); the two whose phases are timelines (lifecycle, tiering) build theirs in measure."""

    def describe(self, profile: Profile) -> str: ...

    def planned_seconds(self, profile: Profile) -> float: ...


class PartedPlanModule(PlanModule, Protocol):
    """plan.py of a study that may be measured in parts: its part names at a profile (for a rig with every engine the
    study uses; its measure.setup narrows them to the rig's), and the time the plan of one part predicts."""

    def parts(self, profile: Profile) -> tuple[str, ...]: ...

    def planned_seconds(self, profile: Profile, *, part: str | None = None) -> float: ...


class MeasureModule(Protocol):
    """measure.py: what differs in measuring this study (needs root when Study.run runs it); part: the part of the
    study to measure (None: all of it), which only a study with parts accepts."""

    def setup(self, rig: Rig, profile: Profile, device: str | None = None, part: str | None = None) -> Setup: ...


def whole_study(study: str, part: str | None) -> None:
    """A study without parts refuses a part, in one ConfigError line."""
    if part is not None:
        raise ConfigError(f"{study} study", "part", f"{part!r}: the study has no parts (it is measured whole; "
                          "measure it without a part)")


class AnalyseModule(Protocol[A_co]):
    """analyse.py: a published run in, the study's Analysis out (pure)."""

    def analyse(self, record: RunRecord) -> A_co: ...


class PresentModule(Protocol[A_contra]):
    """present.py: the study's figures and TeX tables from its Analysis (pure)."""

    def write(self, a: A_contra, figure_dir: Path | None = None, generated_dir: Path | None = None) -> None: ...


@dataclass(frozen=True)
class Modules(Generic[A]):
    """One study's four modules, typed: mypy infers A from analyse and checks that present takes what it gives."""

    plan: PlanModule
    measure: MeasureModule
    analyse: AnalyseModule[A]
    present: PresentModule[A]


__all__ = ["Setup", "PlanModule", "PartedPlanModule", "MeasureModule", "whole_study", "AnalyseModule",
           "PresentModule", "Modules"]
