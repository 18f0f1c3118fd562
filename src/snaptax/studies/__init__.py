"""The registry of studies, and what every study is: four small modules with one direction.

    studies/<id>/__init__.py   a docstring (what the study reproduces); nothing else
    studies/<id>/plan.py       describe(profile) -> str; planned_seconds(profile) -> float;   pure
                               build_plan(profile) -> StudyPlan where its runs are one
    studies/<id>/measure.py    setup(rig, profile, device=None) -> Setup: what differs in     needs root
                               measuring it (Study.run is the one skeleton)
    studies/<id>/analyse.py    analyse(record: RunRecord) -> an Analysis (tables, fits, values)   pure
    studies/<id>/present.py    write(analysis, figure_dir, generated_dir): figures, TeX tables    pure

The four modules' contract is studies/contract.py, checked by mypy for every registered study (studies/checked.py).
One spelling per study everywhere: the id is the CLI's study argument, the package, the notebook
(notebooks/NN_<id>.ipynb), the directory data/<rig>/<id>/, and the first part of its paper value keys.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from .. import profiles
from ..errors import ConfigError, SnaptaxError
from .contract import AnalyseModule, MeasureModule, PartedPlanModule, PlanModule

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..plan import DiskNeed
    from ..record import RunRecord, RunRef


class NeedsRoot(SnaptaxError):
    """Measuring attaches loop devices and opens block devices."""


class NoPublishedRun(SnaptaxError):
    pass


@dataclass(frozen=True)
class Study:
    id: str
    title: str            # as the paper's section and the notebook title
    notebook: str         # file name under notebooks/
    reproduces: str       # which seed(s), in words

    def module(self, part: str) -> ModuleType:
        """One of the study's modules, imported when asked for (a study's analysis needs no engine, its plan no
        altair)."""
        return import_module(f"{__name__}.{self.id}.{part}")

    # The module as the contract types it: checked.MODULES is where mypy checks that each study's module is one.
    def plan_module(self) -> PlanModule:
        return cast(PlanModule, self.module("plan"))

    def measure_module(self) -> MeasureModule:
        return cast(MeasureModule, self.module("measure"))

    def analyse_module(self) -> AnalyseModule[Analysis]:
        return cast("AnalyseModule[Analysis]", self.module("analyse"))

    def describe_plan(self, profile: profiles.Profile) -> str:
        return self.plan_module().describe(profile)

    def planned_seconds(self, profile: profiles.Profile, rig: str | None = None) -> float:
        """The run time the study's plan predicts at a profile (s), without measuring: what its measure's Setup
        gives RunSession, so the same figure a run's manifest records as planned_seconds (0: the plan predicts
        none). rig: a plan whose runs depend on the rig's inferred operating points (a plan module with
        planned_seconds_on(profile, rig), e.g. memory_dump's skipping walker) predicts at that rig's."""
        return self._planned(self.plan_module(), profile, rig)

    @staticmethod
    def _planned(plan: Any, profile: profiles.Profile, rig: str | None, **part: str) -> float:
        """The plan module's planned_seconds, or its planned_seconds_on at `rig` where it has one."""
        on_rig = getattr(plan, "planned_seconds_on", None)
        return float(on_rig(profile, rig, **part) if rig is not None and on_rig is not None
                     else plan.planned_seconds(profile, **part))

    def parted_plan_module(self) -> PartedPlanModule | None:
        """The plan module as a study with parts types it (contract.PartedPlanModule); None: measured whole only."""
        plan = self.module("plan")
        return cast(PartedPlanModule, plan) if hasattr(plan, "parts") else None

    def parts(self, profile: profiles.Profile) -> tuple[str, ...]:
        """The parts the study may be measured in at a profile (issue 49.1; for a rig with every engine the study
        uses: measure.setup narrows them to the rig's); empty for a study measured whole only."""
        plan = self.parted_plan_module()
        return plan.parts(profile) if plan else ()

    def part_seconds(self, profile: profiles.Profile, rig: str | None = None) -> dict[str, float]:
        """Each part's planned run time at a profile (s), as its run's manifest records it (rig: as planned_seconds
        says); empty without parts."""
        plan = self.parted_plan_module()
        if plan is None:
            return {}
        return {name: self._planned(plan, profile, rig, part=name) for name in plan.parts(profile)}

    def check_part(self, profile: profiles.Profile, part: str | None) -> None:
        """Refuse, in one ConfigError line naming the field and the valid names, a part the study does not have at
        the profile (any part, for a study measured whole only)."""
        if part is None:
            return
        names = self.parts(profile)
        if not names:
            raise ConfigError(f"{self.id} study", "part", f"{part!r}: the study has no parts (it is measured whole; "
                              "measure it without --part)")
        if part not in names:
            raise ConfigError(f"{self.id} study", "part", f"unknown part {part!r} (one of: {', '.join(names)})")

    def disk(self, profile: profiles.Profile) -> DiskNeed:
        """The space its work directory needs while it runs at a profile (the study's plan.DISK)."""
        return profiles.study_scale(self.module("plan").DISK, profile, self.id, "disk need")

    def no_planned_time(self) -> str:
        """Why the plan predicts no time, in words, where it says (plan.NO_PLANNED_TIME); else a generic reason."""
        return getattr(self.module("plan"), "NO_PLANNED_TIME", "its plan predicts no time")

    # Every study measures on loop devices (block devices on attached rigs); reading its runs needs no root.
    measuring_needs_root = True

    def run(self, rig: str, profile: str, device: str | None = None, part: str | None = None) -> Path:
        """Measure the study on a rig (a name in rigs/ or a rig file) at a profile; `device` names the rig device
        where the study lets one be chosen (its measure.setup says); `part` one part of a study measured in parts
        (parts; the run is published as that part, record.parts). Needs root. The one skeleton of every study's
        measuring: the study's measure.setup says what differs (contract.Setup), this runs it inside one
        RunSession and returns the published run directory under data/."""
        from ..host import blkio, rig as rigmod
        from ..host.backends import detach_stale_loops
        from ..record import RunPart, RunSession

        prof = profiles.get(profile)
        self.check_part(prof, part)          # a wrong part stops before anything else is asked for
        if self.measuring_needs_root and os.geteuid() != 0:
            raise NeedsRoot("measuring needs root (loop devices and block devices); run `sudo make paper` or "
                            "explore the published runs without measuring (measure=False)")
        r = rigmod.load(rig)
        setup = self.measure_module().setup(r, prof, device, part)
        recorded: RunPart | None = RunPart(part, setup.part_set) if part is not None else None
        with RunSession(r, self.id, prof, setup.parameters.to_json(), devices_used=setup.devices_used,
                        planned_points=setup.planned_points, planned_seconds=setup.planned_seconds,
                        part=recorded) as session:
            # loop devices a killed run left behind, detached while the session holds the measurement lock: no
            # other run can own them now
            detach_stale_loops(r.work_dir)
            blkio.remove_stale()
            setup.measure(session)
        assert session.published is not None
        return session.published

    def analyse(self, record: RunRecord) -> Analysis:
        return self.analyse_module().analyse(record)

    def newest_run(self, rig: str, profile: str) -> RunRef:
        """The newest readable run at `profile` (record.readable_runs: the newer of the newest whole run and the
        newest complete set of part runs; an incomplete set is never read); for a run selection
        (profiles.SELECTIONS), the newest of the first of its profiles that has one."""
        from ..record import readable_runs

        names = profiles.run_profiles(profile)
        for name in names:
            if runs := readable_runs(rig, self.id, name):
                return runs[-1]
        raise NoPublishedRun(f"no published run of study {self.id!r} at profile "
                             f"{' or '.join(repr(p) for p in names)} for rig {rig!r} "
                             f"(measure one: python -m snaptax run {self.id} --rig {rig} --profile {names[-1]})")

    def open(self, rig: str, profile: str, run_dir: str | Path | None = None, measure: bool = False) -> RunRecord:
        """The run a notebook explores: measured now (measure=True), the given run_dir, or the newest readable
        run of the study for the rig and profile (a whole run, or a complete set of part runs read as one)."""
        from ..record import load_run

        ref: RunRef
        if measure:
            ref = self.run(rig, profile)
        elif run_dir:
            ref = Path(run_dir)
        else:
            ref = self.newest_run(rig, profile)
        return load_run(ref)


REGISTRY: tuple[Study, ...] = (
    Study("chain_length", "Seed 001: snapshot chain length", "01_chain_length.ipynb",
          "seed 001 (VMware vSphere snapshots): fio vs chain length, create then delete"),
    Study("calibration", "Rigs and calibration", "02_calibration.ipynb",
          "the emulated spindles; seed 000's reads double"),
    Study("engines", "Engine comparison", "03_engines.ipynb",
          "copy-on-write grain of qcow2, LVM thin and 8 KiB copy-on-first-write"),
    Study("memory_dump", "Seed 003: how long a VM's memory takes to dump", "04_memory_dump.ipynb",
          "seed 003 (lazy checkpoint of a 4 GiB VM): the page-walker's ioBlockPages x ioWait grid, dump-time models"),
    Study("lifecycle", "Seed 000: a snapshot's whole lifecycle, and when its deletion converges",
          "05_lifecycle.ipynb",
          "seed 000 (VMware snapshots on a 10K RAID1): timelines at 25 ms and 0 ms delay, three deletion methods, "
          "the consolidation convergence model"),
    Study("metadata_cache", "Seed 001: what the published losses mean for metadata caching",
          "06_metadata_cache.ipynb",
          "seed 001 (Table 1's 65 % and 35 %): loss with one snapshot against the redo log's L2 cache coverage"),
    Study("chain_bulk", "Seed 001: large sequential I/O and clone time against chain length",
          "07_chain_bulk.ipynb",
          "seed 001 (figures 7-9): 512 KiB sequential reads and writes and a full clone with 0-n snapshots"),
    Study("tiering", "Seed 002: snapshots on an auto-tiered pool", "08_tiering.ipynb",
          "seed 002 (Storwize V7000, SAS only and SAS + SSD Easy Tier): IOPS before, with, during consolidation and "
          "after a snapshot, where the I/O landed, the tiering misplacement model"),
    Study("db_snapshots", "Seed 004: database snapshots on a 15K RAID5 and on SSD", "09_db_snapshots.ipynb",
          "seed 004 (SQL Server 2012 database snapshots): a SELECT INTO with 0, 1 or 2 snapshots whose sparse files "
          "sit on a six-disk 15K RAID5 or an SSD, where the time goes, the database-snapshot cost model"),
)


def ids() -> list[str]:
    return [s.id for s in REGISTRY]


def get(study_id: str) -> Study:
    for s in REGISTRY:
        if s.id == study_id:
            return s
    raise ConfigError("study", "STUDY", f"unknown study {study_id!r} (one of: {', '.join(ids())})")
