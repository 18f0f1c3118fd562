"""The snapshot-engine interface every engine implements, and the host-side plan executor.

An engine owns a live volume on one rig device and a chain of snapshots of it. It is a context manager:
__enter__ starts whatever serves the volume (daemon, guest), __exit__ stops it and removes every file it made,
also on error and Ctrl-C (through snaptax.host.procs.ProcessGroup).
"""
from __future__ import annotations

import abc
import time
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .. import fio
from ..errors import EngineError
from ..plan import Clone, DeleteSnapshot, Gate, GateKeeper, Measure, Plan, SetCache, TakeSnapshot

if TYPE_CHECKING:
    from ..record import RunSession


class SnapshotEngine(abc.ABC):
    #: short engine name as used in rig files and data ('qcow2', 'lvmthin', 'cofw')
    kind: str = ""

    @abc.abstractmethod
    def __enter__(self) -> SnapshotEngine: ...

    @abc.abstractmethod
    def __exit__(self, *exc) -> None: ...

    @property
    @abc.abstractmethod
    def chain_length(self) -> int:
        """Number of snapshots currently in the chain (0: the bare volume)."""

    @abc.abstractmethod
    def fio_target(self) -> fio.FioTarget:
        """Where fio sends I/O for the live volume."""

    @abc.abstractmethod
    def take_snapshot(self) -> str:
        """Snapshot the live volume; returns the new snapshot's name."""

    @abc.abstractmethod
    def delete_snapshot(self, which: str = "newest") -> str:
        """Delete (merge) a snapshot; returns the deleted snapshot's name."""

    def flat_target(self) -> fio.FioTarget:
        """Where fio sends I/O for the flat control: a volume of the same size on the same device that is never
        snapshotted. Engines without one raise EngineError."""
        raise EngineError(f"the {self.kind} engine has no flat control volume")

    def clone(self, target: str = "live") -> int:
        """Copy the live volume's view (or the flat control's) to a new flat image on the same device, wait for
        the copy to finish, and remove it; returns the bytes copied. Engines that cannot clone raise EngineError."""
        raise EngineError(f"the {self.kind} engine cannot clone a volume")

    def set_cache(self, coverage: Fraction) -> dict[str, Any]:
        """Resize the live layer's metadata cache to hold `coverage` of its tables, in place; returns what was set
        (for the run's events). Engines without such a cache raise EngineError."""
        raise EngineError(f"the {self.kind} engine has no metadata cache to resize")

    @abc.abstractmethod
    def counters(self) -> dict[str, float]:
        """Cumulative host-level and engine counters (backend reads/writes/bytes, copies, ...)."""

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """Engine parameters and versions for the provenance manifest."""

    def execute(self, plan: Plan, session: RunSession, *, gate: Gate | None = None) -> None:
        """Run every step of `plan` in order, recording each Measure into `session`; `gate` decides the gated
        Measures (plan.Measure.gate).

        Host-side engines use this as is; an engine that runs fio elsewhere (a guest) overrides it.
        """
        keeper = GateKeeper(plan, gate)
        for index, step in enumerate(plan.steps):
            if not keeper.runs(step):
                continue
            if isinstance(step, TakeSnapshot):
                t0 = time.monotonic()
                name = self.take_snapshot()
                session.log_event("snapshot", name=name, chain_length=self.chain_length,
                                  seconds=time.monotonic() - t0)
            elif isinstance(step, DeleteSnapshot):
                t0 = time.monotonic()
                name = self.delete_snapshot(step.which)
                session.log_event("delete", name=name, which=step.which, chain_length=self.chain_length,
                                  seconds=time.monotonic() - t0)
            elif isinstance(step, Clone):
                before = self.counters()
                t0 = time.monotonic()
                copied = self.clone(step.target)
                seconds = time.monotonic() - t0
                after = self.counters()
                # a clone is not a fio run: its time and the host I/O it caused go into the manifest's events
                session.log_event("clone", index=index, repeat=step.repeat, target=step.target,
                                  chain_length=self.chain_length,
                                  seconds=seconds, bytes=copied,
                                  host={k: after[k] - before[k] for k in after if k in before})
            elif isinstance(step, SetCache):
                set_to = self.set_cache(step.coverage)
                session.log_event("set_cache", index=index, coverage=str(step.coverage), **set_to)
            elif isinstance(step, Measure):
                directory = session.measurement_dir(index, step)
                before = self.counters()
                target = self.fio_target() if step.target == "live" else self.flat_target()
                run = fio.run(step.job, target, directory)
                after = self.counters()
                session.record_measurement(index, step, chain_length=self.chain_length, fio_run=run,
                                           counters_before=before, counters_after=after)
            else:  # pragma: no cover - Step is a closed union
                raise TypeError(f"unknown plan step {step!r}")
