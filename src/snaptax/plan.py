"""An experiment as data: a Plan is a sequence of steps an engine executes in order.

Keeping the experiment as data (not as a loop inside a notebook or an engine) lets every engine run the same
experiment — a host-side engine step by step over QMP, a guest-side engine by shipping the whole plan into a
TCG guest — and lets tests inspect a plan without running it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, Protocol

from .errors import ConfigError
from .fio import FioJob, FioRun

# What a Measure or Clone works on: the live volume (through the chain), or a flat volume of the same size on the
# same device that is never snapshotted, the control that drift on the device is compared against.
Target = Literal["live", "flat"]


@dataclass(frozen=True)
class TakeSnapshot:
    """Snapshot the live volume: the chain grows by one layer."""


@dataclass(frozen=True)
class DeleteSnapshot:
    """Delete a snapshot, merging its data: `newest` (VMware's delete of the latest snapshot: an active
    commit) or `oldest` (consolidating the first delta into the base: an intermediate commit)."""

    which: Literal["newest", "oldest"] = "newest"


@dataclass(frozen=True)
class Measure:
    """Run one fio job against the live volume (or the flat control, `target`) and record it.

    phase: what the experiment is doing ('prefill', 'create', 'delete', 'age', ...), used by analysis to
    select rows; repeat: the repetition index at this point of the plan.
    gate: None, or the name of a loop whose length the host decides while the plan runs: when a gated step is
    reached, the executor asks its Gate (engines' execute(gate=...)) whether it runs; once the Gate says no, no later
    step of that gate runs. A plan so holds "run until the counters say so" as data (at most its gated steps), and a
    guest-side engine that ships the whole plan at once can still let the host end the loop.
    """

    job: FioJob
    phase: str
    repeat: int = 0
    target: Target = "live"
    gate: str | None = None

    @property
    def label(self) -> str:
        return f"{self.phase}-{self.job.name}-r{self.repeat}"


@dataclass(frozen=True)
class Clone:
    """Copy the live volume's current view, read through the whole chain, to a new flat image on the same device,
    timed, then discard the copy: VMware's full clone of a VM that has snapshots (seed 001, figure 9)."""

    repeat: int = 0
    target: Target = "live"


@dataclass(frozen=True)
class SetCache:
    """Resize the live layer's metadata cache, in place, to hold `coverage` (0 ≤ c ≤ 1) of its tables: qcow2's L2
    cache, reopened with the new size (its data and tables stay as they are). What a sweep of cache coverages on one
    filled and rewritten overlay needs; engines without such a cache refuse the plan."""

    coverage: Fraction


Step = TakeSnapshot | DeleteSnapshot | Measure | Clone | SetCache

# The host's answer when a gated Measure is reached: Gate(gate name, the step's repeat) -> run it?
Gate = Callable[[str, int], bool]


def require_gate(plan: Plan, gate: Gate | None) -> None:
    """Refuse, before anything runs, a plan with gated steps given to an executor without a Gate to ask."""
    if gate is None and plan.gates:
        raise ConfigError("plan", "gate", f"the plan has gated steps ({', '.join(sorted(plan.gates))}) and the "
                          "executor was given no Gate to ask")


class GateKeeper:
    """Asks a Gate for each gated step of `plan` and remembers the gates it closed (a closed gate's later steps never
    run and are not asked about). Without a Gate, a plan with gated steps is refused at once (require_gate)."""

    def __init__(self, plan: Plan, gate: Gate | None):
        require_gate(plan, gate)
        self.gate, self.closed = gate, set[str]()

    def runs(self, step: Step) -> bool:
        if not isinstance(step, Measure) or step.gate is None:
            return True
        if step.gate in self.closed:
            return False
        assert self.gate is not None     # require_gate refused a gated plan without one
        if self.gate(step.gate, step.repeat):
            return True
        self.closed.add(step.gate)
        return False


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]

    def measurements(self) -> Iterator[tuple[int, Measure, int]]:
        """(index, step, chain length at that step) for each Measure, without running anything."""
        chain = 0
        for index, step in enumerate(self.steps):
            if isinstance(step, TakeSnapshot):
                chain += 1
            elif isinstance(step, DeleteSnapshot):
                if chain == 0:
                    raise ValueError(f"plan step {index} deletes a snapshot from an empty chain")
                chain -= 1
            elif isinstance(step, Measure):
                yield index, step, chain

    @property
    def gates(self) -> frozenset[str]:
        """The names of the plan's gated loops (plan.Measure.gate)."""
        return frozenset(st.gate for st in self.steps if isinstance(st, Measure) and st.gate is not None)

    @property
    def max_chain_length(self) -> int:
        chain = peak = 0
        for step in self.steps:
            chain += isinstance(step, TakeSnapshot) - isinstance(step, DeleteSnapshot)
            peak = max(peak, chain)
        return peak

    def fio_seconds(self) -> float:
        """The sum of the plan's time-based fio runtimes (with ramps): a lower bound of its run time if every gated
        step runs, and an upper bound of what its gated steps take (a Gate may skip some: plan.Measure.gate)."""
        return sum((m.job.runtime_s or 0) + m.job.ramp_time_s for _, m, _ in self.measurements())


@dataclass(frozen=True)
class VariantPlan:
    """The plan one configuration (variant) of a study executes, with what describes that configuration."""

    variant: str
    plan: Plan


@dataclass(frozen=True)
class StudyPlan:
    """Everything a study run measures: one Plan per variant, executed in this order in one session."""

    variants: tuple[VariantPlan, ...]

    def points(self) -> int:
        return sum(1 for v in self.variants for _ in v.plan.measurements())

    def fio_seconds(self) -> float:
        """The sum of the plans' time-based fio runtimes (Plan.fio_seconds): a lower bound of the run's time if
        every gated step runs, an upper bound of what the gated steps take."""
        return sum(v.plan.fio_seconds() for v in self.variants)

    def phase_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for v in self.variants:
            for _, m, _ in v.plan.measurements():
                counts[m.phase] = counts.get(m.phase, 0) + 1
        return counts

    def variant(self, name: str) -> VariantPlan:
        for v in self.variants:
            if v.variant == name:
                return v
        raise KeyError(name)


# Independent replicates of a variant (issue 47.3): each is the variant's whole plan again on a fresh engine, device
# and fio process, recorded as a variant of its own named REPLICATE_NAME (the first keeps the variant's name, so a
# run of one replicate reads as runs always did). Analyses split the name back (split_replicate) and take their
# intervals over the replicates.
REPLICATE_MARK = "@r"


def replicate_name(variant: str, replicate: int) -> str:
    """The recorded name of replicate `replicate` (0, 1, ...) of `variant`."""
    if replicate < 0:
        raise ValueError(f"replicate {replicate} < 0")
    return variant if replicate == 0 else f"{variant}{REPLICATE_MARK}{replicate}"


def split_replicate(name: str) -> tuple[str, int]:
    """(variant, replicate) of a recorded variant name (replicate_name's inverse)."""
    base, mark, number = name.rpartition(REPLICATE_MARK)
    if mark and base and number.isdigit() and int(number) > 0:
        return base, int(number)
    return name, 0


def replicated(study: StudyPlan, replicates: int) -> StudyPlan:
    """`study` with each variant's plan `replicates` times, replicate-major (every variant of replicate 0, then of
    replicate 1, ...): a drift of the host disk over the sitting then falls on every variant alike."""
    if replicates < 1:
        raise ConfigError("plan", "replicates", f"{replicates}: at least one replicate")
    return StudyPlan(tuple(VariantPlan(replicate_name(v.variant, r), v.plan)
                           for r in range(replicates) for v in study.variants))


# A study measured in parts (issue 49.1, record.parts) is split into one part per configuration and replicate: each
# part is one recorded variant of the plan, named by part_name (`<configuration>.r<replicate>`, replicates counted
# from 0 as split_replicate counts them). A configuration's plan in one replicate holds the baselines its ratios are
# taken against, so no paired ratio crosses two parts; replicates are independent runs anyway (a fresh engine, device
# and fio process each), so a session between two of them only adds to their spread, which the intervals over the
# replicates take in. A part of one replicate fits a measuring window where one of all a configuration's did not.
PART_REPLICATE_MARK = ".r"


def part_name(variant: str) -> str:
    """The part that measures the recorded variant `variant` (replicate_name): its configuration and replicate."""
    configuration, replicate = split_replicate(variant)
    return f"{configuration}{PART_REPLICATE_MARK}{replicate}"


def replicate_parts(study: StudyPlan) -> tuple[str, ...]:
    """The parts of a study measured one configuration and replicate per part (part_name), in the plan's order
    (replicate-major where the plan is: every configuration's first replicate, then their second, ...)."""
    return tuple(part_name(v.variant) for v in study.variants)


def replicate_part(study: StudyPlan, part: str | None, source: str) -> StudyPlan:
    """`study` whole (part None), or only the variant of part `part` (replicate_parts). An unknown part is one
    ConfigError line naming `source`, the field and the valid parts."""
    if part is None:
        return study
    names = replicate_parts(study)
    if part not in names:
        raise ConfigError(source, "part", f"unknown part {part!r} (one of: {', '.join(names)})")
    return StudyPlan(tuple(v for v in study.variants if part_name(v.variant) == part))


def with_replicates(frame: Any, column: str = "variant") -> Any:
    """A per-measurement frame (pandas) with its recorded variant names split: `column` the variant, `replicate`
    the replicate, `recorded_variant` the name as recorded (the key of the run's directories)."""
    split = [split_replicate(str(v)) for v in frame[column]]
    return frame.assign(recorded_variant=frame[column], **{column: [v for v, _ in split]},
                        replicate=[r for _, r in split])


@dataclass(frozen=True)
class DiskNeed:
    """The space a study's work directory takes while the study runs (its image files are sparse and removed when
    the run ends; the published run keeps a few MiB): about `gib`, or at most `gib` when `bound`; None when not known
    at that profile (full profiles the build machine has not run)."""

    gib: float | None
    bound: bool = False

    def __str__(self) -> str:
        if self.gib is None:
            return "not known"
        return f"{'<=' if self.bound else '~'}{self.gib:g} GiB"


def disk_needs(quick: float, full: float | None) -> dict[str, DiskNeed]:
    """A study's DISK table (by profile name) from its measured quick figure and its full figure (None: not known).
    Smoke is bounded by quick: every study's smoke scale has smaller volumes, shorter chains and fewer points."""
    return {"smoke": DiskNeed(quick, bound=True), "quick": DiskNeed(quick), "full": DiskNeed(full)}


class Recorder(Protocol):
    """Where the measurements of an executed plan go: a run being written (record.RunWriter and its RunSession).
    Typed here, by what executing a plan needs of it, so that what executes plans below the run record (the
    emulated spindles' ServedSpindle) does not import it."""

    def measurement_dir(self, index: int, step: Measure) -> Path: ...

    def record_measurement(self, index: int, step: Measure, *, chain_length: int, fio_run: FioRun,
                           counters_before: dict[str, float], counters_after: dict[str, float],
                           extra: dict[str, Any] | None = None) -> None: ...
