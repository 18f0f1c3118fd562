"""What every volume is: the interface arrays.py's volumes and the controller cache (ctrlcache.py) share, and the
join of a command's parts (stdlib only). A module of its own so that a volume wrapping another (the controller
cache) need not import arrays.py, which builds it."""
from __future__ import annotations

from collections.abc import Callable

from .model import Member

Done = Callable[[float], None]
Eta = Callable[[float], None] | None   # told a command's completion time once it is fixed (before it completes)


class Join:
    """Calls on_done(t_last) once `n` parts have completed; and eta(t_last) as soon as every part's completion
    time is fixed (part_eta, each part's Op.eta or a member flush's eta; always before the whole completes). A
    member fixes a command's completion time when it dispatches it (it is never preempted) or accepts it into its
    write cache, a flush's when it takes it (nothing to destage) or when its destage ends, and completes it then,
    so the latest of the parts' etas is the whole's completion time."""

    __slots__ = ("n", "on_done", "t", "eta", "unknown", "t_eta")

    def __init__(self, n: int, on_done: Done, eta: Eta = None):
        self.n, self.on_done, self.t = n, on_done, 0.0
        self.eta, self.unknown, self.t_eta = eta, n, 0.0

    def part(self, t: float) -> None:
        self.n -= 1
        self.t = max(self.t, t)
        if self.n == 0:
            self.on_done(self.t)

    def part_eta(self, t: float) -> None:
        self.unknown -= 1
        self.t_eta = max(self.t_eta, t)
        if self.unknown == 0 and self.eta is not None:
            self.eta(self.t_eta)


class Volume:
    """A block address space [0, capacity) that turns host commands into member commands."""

    capacity: int
    members: list[Member]

    def submit(self, offset: int, length: int, write: bool, t: float, on_done: Done, eta: Eta = None) -> None:
        """`eta`, if the volume can tell, is called with the completion time as soon as it is fixed: when the one
        member command that carries the host command is dispatched, or (RAID1, RAID5) when the last of the member
        commands that end it is. The emulator's request thread then times its reply itself (plugin.finish),
        instead of waiting for the pump to advance the simulator past it."""
        raise NotImplementedError

    def flush(self, t: float, on_done: Done, eta: Eta = None) -> None:
        """Every member flushes; done when the last is. `eta` is told the time once every member's is fixed."""
        join = Join(len(self.members), on_done, eta)
        for m in self.members:
            m.flush(t, join.part, join.part_eta)

    def next_time(self) -> float | None:
        return None

    def fire(self, t: float) -> None:  # pragma: no cover - only volumes with timers override
        pass

    def extra_counters(self) -> dict:
        return {}
