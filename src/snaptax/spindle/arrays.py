"""Volumes over members (single drive, RAID1, RAID5, tiered pool) and the event-driven Simulator.

Data never moves here: the backing file holds the volume's bytes at their logical offsets; these
classes decide only *when* each host command completes and what the members do meanwhile.

The Simulator is advanced lazily: advance(t) processes every member/volume event with time ≤ t in
time order (ties: member order), and a command submitted at t sees exactly the events before it. The
nbdkit plugin calls advance(now) before each submit and from a pump thread sleeping until
next_event_time(), so all decisions are made in simulated time, whatever the threads' wake-up jitter.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass

from .ctrlcache import ControllerCache
from .model import Counters, Disk, Member, Op, Ssd, ZeroDevice
from .profiles import (
    ControllerSpec,
    DeviceSpec,
    DiskSpec,
    DriveProfile,
    Raid1Spec,
    Raid5Spec,
    SsdProfile,
    TierSpec,
)
from .volume import Done, Eta, Join, Volume


def _member(spec: DiskSpec, used: int, name: str) -> Member:
    p = spec.profile
    if isinstance(p, DriveProfile):
        return Disk(p, used, name)
    if isinstance(p, SsdProfile):
        return Ssd(p, used, name)
    return ZeroDevice(name)


class Single(Volume):
    def __init__(self, spec: DiskSpec, capacity: int, name: str):
        self.capacity = capacity
        self.member = _member(spec, capacity, name)
        self.members = [self.member]

    def submit(self, offset, length, write, t, on_done, eta=None):
        self.member.submit(Op(offset, length, write, on_done, eta=eta), t)


class Raid1(Volume):
    """Two mirrors: a read goes to the member that can start it sooner (estimate from its backlog and
    head position, ties to member 0); a write goes to both and completes when both have."""

    def __init__(self, spec: Raid1Spec, capacity: int, name: str):
        self.capacity = capacity
        self.members = [_member(m, capacity, f"{name}.m{i}") for i, m in enumerate(spec.members)]

    def submit(self, offset, length, write, t, on_done, eta=None):
        if write:
            join = Join(2, on_done, eta)
            for m in self.members:
                m.submit(Op(offset, length, True, join.part, eta=join.part_eta), t)
            return
        target = min(self.members, key=lambda m: m.estimate_free(t, offset))
        target.submit(Op(offset, length, False, on_done, eta=eta), t)


@dataclass(frozen=True)
class Chunk:
    """A piece of a host command on one RAID5 member."""

    member: int
    lba: int
    length: int


class Raid5(Volume):
    """N members, stripe unit su, left-symmetric layout (Linux md's default):

        row r = offset // (su·(N−1)),  data chunk j = (offset mod su·(N−1)) // su
        parity member p(r) = N−1 − (r mod N),  data member of chunk j = (p(r) + 1 + j) mod N
        member LBA = r·su + offset mod su

    Reads: each chunk piece from its member, in parallel. Writes, per stripe row: a full-row write
    writes N−1 data units + parity (no reads); otherwise read-modify-write — read old data pieces and
    the old parity range (the union of the pieces' in-unit ranges), then write new data and parity:
    4 member I/Os for a small write, the RAID5 small-write penalty."""

    def __init__(self, spec: Raid5Spec, capacity: int, name: str):
        n = len(spec.members)
        self.n, self.su = n, spec.stripe_unit_bytes
        self.row_bytes = self.su * (n - 1)
        rows = math.ceil(capacity / self.row_bytes)
        self.capacity = capacity
        self.members = [_member(m, rows * self.su, f"{name}.m{i}") for i, m in enumerate(spec.members)]
        self.rmw_rows = 0
        self.full_rows = 0

    def parity_member(self, row: int) -> int:
        return self.n - 1 - (row % self.n)

    def map(self, offset: int, length: int) -> dict[int, list[Chunk]]:
        """Stripe row → its data chunks for the byte range [offset, offset+length)."""
        rows: dict[int, list[Chunk]] = {}
        end = offset + length
        while offset < end:
            row, within = divmod(offset, self.row_bytes)
            j, in_unit = divmod(within, self.su)
            piece = min(end - offset, self.su - in_unit)
            member = (self.parity_member(row) + 1 + j) % self.n
            rows.setdefault(row, []).append(Chunk(member, row * self.su + in_unit, piece))
            offset += piece
        return rows

    def submit(self, offset, length, write, t, on_done, eta=None):
        rows = self.map(offset, length)
        if not write:
            chunks = [c for cs in rows.values() for c in cs]
            join = Join(len(chunks), on_done, eta)
            for c in chunks:
                self.members[c.member].submit(Op(c.lba, c.length, False, join.part, eta=join.part_eta), t)
            return
        join = Join(len(rows), on_done, eta)
        for row, chunks in rows.items():
            self._write_row(row, chunks, t, join.part, join.part_eta)

    def _write_row(self, row: int, chunks: list[Chunk], t: float, on_done: Done, eta: Eta) -> None:
        """on_done: the row's write has completed; eta: its completion time is fixed (its write phase's member
        commands are all dispatched or cached; the read phase of a read-modify-write fixes nothing)."""
        p = self.parity_member(row)
        if sum(c.length for c in chunks) == self.row_bytes:
            self.full_rows += 1
            writes = chunks + [Chunk(p, row * self.su, self.su)]
            join = Join(len(writes), on_done, eta)
            for c in writes:
                self.members[c.member].submit(Op(c.lba, c.length, True, join.part, eta=join.part_eta), t)
            return
        self.rmw_rows += 1
        lo = min(c.lba for c in chunks)
        hi = max(c.lba + c.length for c in chunks)
        parts = chunks + [Chunk(p, lo, hi - lo)]

        def write_phase(t2: float) -> None:
            wjoin = Join(len(parts), on_done, eta)
            for c in parts:
                self.members[c.member].submit(Op(c.lba, c.length, True, wjoin.part, eta=wjoin.part_eta), t2)

        rjoin = Join(len(parts), write_phase)
        for c in parts:
            self.members[c.member].submit(Op(c.lba, c.length, False, rjoin.part), t)

    def extra_counters(self) -> dict:
        return {"rmw_rows": self.rmw_rows, "full_stripe_rows": self.full_rows}


class Tier(Volume):
    """An SSD + HDD extent pool (see TierSpec). Extent e lives at `where[e]` = (tier, slot) or is
    unallocated (reads of it return zeros at once and touch no member; its first write allocates it on
    `new_allocation`). Heat = host I/Os of at most heat_max_io_bytes to the extent in the last `window_cycles`
    cycles. At each cycle end moves are planned (up to max_migrations_per_cycle, if set): hottest HDD extents
    first, each onto a free SSD slot or in exchange for a colder SSD extent (demotion first). Moves run one at a
    time in the background, chunk by chunk (read from the source tier, then write to the destination), paced to
    migration_mb_s; the extent's mapping switches when its copy ends.

    Per-tier counters (counted when the host command completes, so that at any instant they add up to the
    Simulator's host counts): a command is an SSD or HDD I/O if every byte of it is on that tier, an unmapped
    read if it read only never-written extents, a split I/O otherwise; bytes are counted per tier exactly."""

    def __init__(self, spec: TierSpec, capacity: int, name: str):
        self.spec = spec
        self.capacity = capacity
        self.n_ext = math.ceil(capacity / spec.extent_bytes)
        self.ssd_slots = max(1, int(self.n_ext * spec.ssd_fraction))
        eb = spec.extent_bytes
        self.ssd = build_volume(spec.ssd, self.ssd_slots * eb, f"{name}.ssd")
        self.hdd = build_volume(spec.hdd, self.n_ext * eb, f"{name}.hdd")
        self.members = self.ssd.members + self.hdd.members
        self.tiers = {"ssd": self.ssd, "hdd": self.hdd}
        self.where: dict[int, tuple[str, int]] = {}
        self.free = {"ssd": deque(range(self.ssd_slots)), "hdd": deque(range(self.n_ext))}
        self.heat_now: dict[int, int] = {}
        self.history: deque[dict[int, int]] = deque(maxlen=spec.window_cycles)
        self.next_cycle = spec.cycle_s
        self.plan: deque[tuple[int, str]] = deque()   # (extent, destination tier)
        self.moving: int | None = None
        # rate limit: the next move may start at `move_allowed_at`; `move_at` is the timer set while one waits
        self.move_interval_s = eb / (spec.migration_mb_s * 1e6)
        self.move_allowed_at = 0.0
        self.move_at: float | None = None
        self.promotions = self.demotions = self.migrated_bytes = 0
        self.cycles = 0
        # where host I/O landed: (class, "reads"/"writes") -> commands; (tier, "bytes_read"/"bytes_written") -> bytes
        # (a write always lands on a tier: its first write allocates an extent, so "unmapped" has reads only)
        self.landed_ios = {(c, d): 0 for c in ("ssd", "hdd", "split") for d in ("reads", "writes")}
        self.landed_ios[("unmapped", "reads")] = 0
        self.landed_bytes = {(c, d): 0 for c in ("ssd", "hdd") for d in ("bytes_read", "bytes_written")}
        self.landed_bytes[("unmapped", "bytes_read")] = 0
        self.heat_ios = self.heat_ignored_ios = 0

    # -- host I/O

    def _allocate(self, ext: int) -> tuple[str, int]:
        first = self.spec.new_allocation
        other = "ssd" if first == "hdd" else "hdd"
        tier = first if self.free[first] else other
        loc = (tier, self.free[tier].popleft())
        self.where[ext] = loc
        return loc

    def submit(self, offset, length, write, t, on_done, eta=None):
        eb = self.spec.extent_bytes
        pieces = []
        end = offset + length
        while offset < end:
            ext, within = divmod(offset, eb)
            n = min(end - offset, eb - within)
            pieces.append((ext, within, n))
            offset += n
        # Easy Tier counts only small I/Os as heat: a large (sequential) command heats none of its extents
        counts_as_heat = length <= self.spec.heat_max_io_bytes
        if counts_as_heat:
            self.heat_ios += 1
        else:
            self.heat_ignored_ios += 1
        # first decide where every piece lands (allocating on first write), then submit: a command made only of
        # unmapped reads completes inside the submitting loop, and its counts must be complete by then
        routed: list[tuple[str, int, int, int]] = []      # (tier or "unmapped", slot, within, n)
        for ext, within, n in pieces:
            if counts_as_heat:
                self.heat_now[ext] = self.heat_now.get(ext, 0) + 1
            loc = self.where.get(ext)
            if loc is None and write:
                loc = self._allocate(ext)
            routed.append((loc[0], loc[1], within, n) if loc else ("unmapped", -1, within, n))
        classes = {r[0] for r in routed}
        cls = classes.pop() if len(classes) == 1 else "split"
        direction = "writes" if write else "reads"
        byte_kind = "bytes_written" if write else "bytes_read"

        def landed(t_done: float) -> None:
            self.landed_ios[(cls, direction)] += 1
            for where, _, _, n in routed:
                self.landed_bytes[(where, byte_kind)] += n
            on_done(t_done)

        # the parts' etas make the whole's (since 2026-11-28: the emulator's request threads time tier commands
        # themselves, as they do every other device's, instead of waiting for the pump)
        join = Join(len(routed), landed, eta)
        for where, slot, within, n in routed:
            if where == "unmapped":
                join.part_eta(t)   # never written: zeros, no media access
                join.part(t)
            else:
                self.tiers[where].submit(slot * eb + within, n, write, t, join.part, join.part_eta)

    # -- the tiering cycle

    def next_time(self) -> float | None:
        if self.move_at is not None:
            return min(self.next_cycle, self.move_at)
        return self.next_cycle

    def fire(self, t: float) -> None:
        if self.move_at is not None and self.move_at <= self.next_cycle:
            self.move_at = None      # a paced move may start now (a cycle due at the same time fires next)
            self._next_move(t)
            return
        self.cycles += 1
        self.next_cycle = t + self.spec.cycle_s
        self.history.append(self.heat_now)
        self.heat_now = {}
        heat: dict[int, int] = {}
        for h in self.history:
            for e, c in h.items():
                heat[e] = heat.get(e, 0) + c
        self.plan_migrations(heat)
        self._next_move(t)

    def plan_migrations(self, heat: dict[int, int]) -> None:
        if self.plan or self.moving is not None:
            return   # the previous cycle's moves are still running: skip this cycle, as Easy Tier would
        on_hdd = sorted((e for e, (tier, _) in self.where.items() if tier == "hdd" and heat.get(e, 0) > 0),
                        key=lambda e: (-heat.get(e, 0), e))
        on_ssd = sorted((e for e, (tier, _) in self.where.items() if tier == "ssd"),
                        key=lambda e: (heat.get(e, 0), e))
        free_ssd = len(self.free["ssd"])
        cap = self.spec.max_migrations_per_cycle
        budget = math.inf if cap is None else cap
        for e in on_hdd:
            if budget <= 0:
                break
            if free_ssd > 0:
                self.plan.append((e, "ssd"))
                free_ssd -= 1
                budget -= 1
            elif on_ssd and heat.get(on_ssd[0], 0) < heat[e] and budget >= 2:
                cold = on_ssd.pop(0)
                self.plan.append((cold, "hdd"))
                self.plan.append((e, "ssd"))
                budget -= 2
            else:
                break

    def _next_move(self, t: float) -> None:
        if self.moving is not None or not self.plan or self.move_at is not None:
            return
        if t < self.move_allowed_at:     # the migration rate limit: wait for the pacing timer
            self.move_at = self.move_allowed_at
            return
        ext, dest = self.plan.popleft()
        src_tier, src_slot = self.where[ext]
        if src_tier == dest or not self.free[dest]:
            self._next_move(t)
            return
        dst_slot = self.free[dest].popleft()
        self.moving = ext
        self.move_allowed_at = t + self.move_interval_s
        eb, cb = self.spec.extent_bytes, self.spec.migration_chunk_bytes
        src, dst = self.tiers[src_tier], self.tiers[dest]
        chunks = deque(range(0, eb, cb))

        def copy_next(t1: float) -> None:
            if not chunks:
                self.where[ext] = (dest, dst_slot)
                self.free[src_tier].append(src_slot)
                self.migrated_bytes += eb
                if dest == "ssd":
                    self.promotions += 1
                else:
                    self.demotions += 1
                self.moving = None
                self._next_move(t1)
                return
            off = chunks.popleft()
            src.submit(src_slot * eb + off, cb, False, t1,
                       lambda t2: dst.submit(dst_slot * eb + off, cb, True, t2, copy_next))

        copy_next(t)

    def extra_counters(self) -> dict:
        on_ssd = sum(1 for tier, _ in self.where.values() if tier == "ssd")
        out = {"extents": self.n_ext, "ssd_slots": self.ssd_slots, "extents_allocated": len(self.where),
               "extents_on_ssd": on_ssd, "promotions": self.promotions, "demotions": self.demotions,
               "migrated_bytes": self.migrated_bytes, "tier_cycles": self.cycles,
               "migration_running": self.moving is not None, "migrations_planned": len(self.plan),
               "heat_ios": self.heat_ios, "heat_ignored_ios": self.heat_ignored_ios}
        out.update({f"{c}_{d}": n for (c, d), n in self.landed_ios.items()})
        out.update({f"{c}_{d}": n for (c, d), n in self.landed_bytes.items()})
        return out

    def location(self, offset: int) -> str | None:
        loc = self.where.get(offset // self.spec.extent_bytes)
        return loc[0] if loc else None


def build_volume(spec: DeviceSpec, capacity: int, name: str = "array") -> Volume:
    if isinstance(spec, DiskSpec):
        return Single(spec, capacity, name)
    if isinstance(spec, Raid1Spec):
        return Raid1(spec, capacity, name)
    if isinstance(spec, Raid5Spec):
        return Raid5(spec, capacity, name)
    if isinstance(spec, ControllerSpec):
        array = build_volume(spec.array, capacity, name)
        segment = array.row_bytes if isinstance(array, Raid5) else spec.cache.segment_bytes
        return ControllerCache(spec.cache, array, segment, name)
    return Tier(spec, capacity, name)


# ------------------------------------------------------------------ simulator

class Simulator:
    """The whole device: one volume (possibly nested) and its members, advanced in simulated time.

    Host commands are identified by an opaque token; completions are collected as (token, t_done).

    A flush answered after a drive's command overhead (nothing to destage) is, like every completion, an event of
    its member, told as an eta ahead. Its token is also in `sleep_etas`: the emulator's request thread sleeps until
    it rather than spinning for it. Where flushes are half the commands (the copy-on-write engine's syncs), several
    would spin at once, each holding the GIL for whole switch intervals, and delay every other thread."""

    def __init__(self, spec: DeviceSpec, capacity: int, name: str = "array"):
        self.volume = build_volume(spec, capacity, name)
        self.members = self.volume.members
        self.array = Counters(name)
        self.now = 0.0
        self._done: list[tuple[Hashable, float]] = []
        self.latency_sum_s = 0.0
        self.volumes = _volumes(self.volume)
        self.etas: dict[Hashable, float] = {}     # outstanding host commands whose completion time is fixed
        self._new_etas: list[Hashable] = []
        self.sleep_etas: set[Hashable] = set()  # etas of flushes: timed by sleeping, not spinning

    def submit(self, token: Hashable, kind: str, offset: int, length: int, t: float) -> None:
        """kind: 'read', 'write' or 'flush'. Call advance(t) first so earlier events are processed."""
        self.now = max(self.now, t)
        self.array.qd_change(t, +1)

        def complete(t_done: float) -> None:
            self.array.qd_change(t_done, -1)
            if kind != "flush":
                self.array.done(kind == "write", length)
            self.latency_sum_s += t_done - t
            self.etas.pop(token, None)
            self.sleep_etas.discard(token)
            self._done.append((token, t_done))

        def eta(t_done: float) -> None:
            self.etas[token] = t_done
            self._new_etas.append(token)

        def flush_eta(t_done: float) -> None:
            if t_done > self.now:   # one that completes now is delivered now, without timing
                eta(t_done)
                self.sleep_etas.add(token)

        if kind == "flush":
            self.volume.flush(t, complete, flush_eta)
        else:
            self.volume.submit(offset, length, kind == "write", t, complete, eta)

    def take_etas(self) -> list[Hashable]:
        """Tokens whose completion time became known since the last call (see `etas`)."""
        new, self._new_etas = self._new_etas, []
        return new

    def event_times(self) -> list[float]:
        """The next event time of every member and timed volume (for a pump that skips owned events)."""
        times = [m.next_time() for m in self.members] + [v.next_time() for v in self.volumes]
        return [x for x in times if x is not None]

    def next_event_time(self) -> float | None:
        present = self.event_times()
        return min(present) if present else None

    def advance(self, until: float) -> list[tuple[Hashable, float]]:
        """Process all events up to `until`; return the host completions (token, time) so far."""
        best: Member | Volume | None
        while True:
            best_t, best = math.inf, None
            for m in self.members:
                nt = m.next_time()
                if nt is not None and nt < best_t:
                    best_t, best = nt, m
            for v in self.volumes:
                nt = v.next_time()
                if nt is not None and nt < best_t:
                    best_t, best = nt, v
            if best is None or best_t > until:
                break
            self.now = max(self.now, best_t)
            best.fire(best_t)
        self.now = max(self.now, until)
        return self.take_done()

    def take_done(self) -> list[tuple[Hashable, float]]:
        done, self._done = self._done, []
        return done

    def counters(self) -> dict:
        t = self.now
        arr = self.array.snapshot(t)
        # an array's counters are host commands: seek and busy fields belong to members
        for k in ("seek_hist_log2_cyl", "seek_cyl_mean", "cache_hits", "busy_s", "utilization"):
            arr.pop(k, None)
        ios = self.array.reads + self.array.writes
        arr["latency_mean_ms"] = round(self.latency_sum_s / ios * 1e3, 4) if ios else 0.0
        arr["latency_s_sum"] = round(self.latency_sum_s, 6)     # cumulative: Δ/Δt is the mean queue (Little)
        for v in self.volumes:
            arr.update(v.extra_counters())
        return {"time_s": round(t, 6), "array": arr, "members": [m.counters.snapshot(t) for m in self.members]}


def _volumes(v: Volume) -> list[Volume]:
    if isinstance(v, Tier):
        return [v] + _volumes(v.ssd) + _volumes(v.hdd)
    if isinstance(v, ControllerCache):
        return [v] + _volumes(v.array)
    return [v]
