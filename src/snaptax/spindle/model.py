"""One mechanical drive in simulated time (stdlib only, deterministic).

Time is in seconds of *simulated* time; the nbdkit plugin maps it 1:1 onto CLOCK_MONOTONIC, offline
predictions just advance it.

Geometry (DriveProfile, scaled to `used_bytes`)
  Stroke position x ∈ [0, 1] (0 = outer diameter). At constant bit density a track's capacity, and the
  media rate, are proportional to its radius, taken linear in x: ρ(x) = 1 − (1 − k)·x with
  k = inner_rate / outer_rate. LBAs fill the stroke outer to inner, so the fraction f of the LBA space
  before x is  f(x) = (x − (1−k)·x²/2) / ρ̄,  ρ̄ = (1 + k)/2,  inverted in closed form by x_of().
  Sequential streaming turns the platter R = used_bytes / (mean_rate · T_rev) times over the whole stroke,
  so the angle of an LBA is θ(L) = frac(R · x(L)) and a transfer of [L, L+n) takes (x(L+n) − x(L))·R·T_rev:
  streaming keeps angle and time consistent, so sequential I/O never pays a rotation per request.

Capacity scaling (quick runs). A scaled drive keeps the full drive's mechanics: its `used_bytes` are
  spread over the *full* stroke (x covers [0, 1] whatever the capacity), seek distances are counted in
  the full drive's cylinders (|Δx| · cylinders), the media rate at x is the full drive's, and the
  platter turns at the same rpm. What shrinks is R (fewer revolutions to stream the smaller LBA space),
  i.e. each revolution of a sequential stream crosses more cylinders than on the real drive. Random
  and span-limited I/O — what the studies measure — keep their meaning: a 10 % span is 10 % of the
  stroke, exactly as on the full drive.

Service of one command dispatched at t (positioning may start once the command is decoded, at
  t_cmd = max(t, t_submit + overhead), i.e. command overhead overlaps a previous command's transfer
  when the command waited in the queue — as on queued SAS drives):
    seek      s(d) from the Ruemmler–Wilkes curve, d = |Δx|·cylinders (read or write curve);
    rotation  wait until the platter angle frac(t/T_rev) reaches θ(L);
    transfer  (x(L+n) − x(L))·R·T_rev.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ConfigError
from .profiles import DriveProfile, SeekSpec, SsdProfile

# ------------------------------------------------------------------ seek curve

@dataclass(frozen=True)
class SeekCurve:
    """Ruemmler–Wilkes seek time (ms) against distance d in cylinders:

        s(d) = 0                 d = 0 (same cylinder)
        s(d) = a + b·√d          1 ≤ d < d_b          (acceleration-limited short seeks)
        s(d) = c + e·d           d ≥ d_b              (coast at full speed)

    For 0 < d < 1 cylinder (possible on a scaled drive) s = s(1): any head movement costs a settle."""

    a: float
    b: float
    c: float
    e: float
    d_b: float
    cylinders: float

    def ms(self, d: float) -> float:
        if d < 0.5:
            return 0.0
        if d < 1.0:
            d = 1.0
        if d < self.d_b:
            return self.a + self.b * math.sqrt(d)
        return self.c + self.e * d

    def mean_ms(self, span: float = 1.0) -> float:
        """Mean seek over two uniformly random positions within the first `span` of the stroke
        (pdf of the distance fraction u: 2(1−u)); Simpson's rule on 2000 intervals."""
        n, dmax = 2000, span * self.cylinders
        h = 1.0 / n
        total = 0.0
        for i in range(n + 1):
            u = i * h
            w = 1 if i in (0, n) else (4 if i % 2 else 2)
            total += w * self.ms(u * dmax) * 2 * (1 - u)
        return total * h / 3


def _solve(m: list[list[float]], v: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (4×4; stdlib only)."""
    n = len(v)
    a = [row[:] + [v[i]] for i, row in enumerate(m)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[piv] = a[piv], a[col]
        if abs(a[col][col]) < 1e-300:
            raise ZeroDivisionError("singular seek system")
        for r in range(n):
            if r != col:
                f = a[r][col] / a[col][col]
                for c in range(col, n + 1):
                    a[r][c] -= f * a[col][c]
    return [a[i][n] / a[i][i] for i in range(n)]


def fit_seek_curve(spec: SeekSpec, cylinders: float, short_fraction: float, source: str = "profile",
                   field_name: str = "seek") -> SeekCurve:
    """The curve through the datasheet's three figures. Four linear conditions on (a, b, c, e):

        s(1) = track_to_track                      a + b = t1
        s(N) = full_stroke                         c + e·N = tf
        continuity at d_b = short_fraction·N        a + b·√d_b − c − e·d_b = 0
        mean over random seeks = average            ∫₀¹ s(uN)·2(1−u) du = ta
    with ∫₀^{u_b} 2(1−u)du = 2u_b − u_b², ∫₀^{u_b} √(uN)·2(1−u)du = 2√N(⅔u_b^{3/2} − ⅖u_b^{5/2}),
    ∫_{u_b}^1 2(1−u)du = (1−u_b)², ∫_{u_b}^1 uN·2(1−u)du = N(⅓ − u_b² + ⅔u_b³)."""
    n, ub = float(cylinders), float(short_fraction)
    if n < 10:
        raise ConfigError(source, field_name, f"only {n:.1f} cylinders: check capacity/heads/rates")
    db = ub * n
    rows = [
        [1.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, n],
        [1.0, math.sqrt(db), -1.0, -db],
        [2 * ub - ub * ub, 2 * math.sqrt(n) * (2 / 3 * ub ** 1.5 - 2 / 5 * ub ** 2.5),
         (1 - ub) ** 2, n * (1 / 3 - ub * ub + 2 / 3 * ub ** 3)],
    ]
    a, b, c, e = _solve(rows, [spec.track_to_track_ms, spec.full_stroke_ms, 0.0, spec.average_ms])
    if b <= 0 or e <= 0:
        raise ConfigError(source, field_name,
                          f"figures {spec.track_to_track_ms}/{spec.average_ms}/{spec.full_stroke_ms} ms give a "
                          f"non-increasing seek curve (b={b:.4g}, e={e:.4g}); check them or short_seek_fraction")
    return SeekCurve(a, b, c, e, db, n)


# ------------------------------------------------------------------ geometry

class Geometry:
    """LBA byte offset ↔ stroke position, angle and transfer time for a drive scaled to `used_bytes`."""

    def __init__(self, p: DriveProfile, used_bytes: int):
        self.k = p.inner_mb_s / p.outer_mb_s
        self.rho_bar = (1 + self.k) / 2
        self.used = float(used_bytes)
        self.t_rev = p.t_rev_s
        self.revs = used_bytes / (p.mean_rate_bytes_s * p.t_rev_s)   # R: revolutions to stream it all
        self.cylinders = p.cylinders

    def x_of(self, lba: float) -> float:
        """Stroke position of a byte offset: the root of (1−k)/2·x² − x + ρ̄·f = 0 in [0, 1]."""
        f = min(max(lba / self.used, 0.0), 1.0)
        if self.k >= 1.0:
            return f
        q = 1 - self.k
        return (1 - math.sqrt(max(0.0, 1 - 2 * q * self.rho_bar * f))) / q

    def lba_of_x(self, x: float) -> float:
        x = min(max(x, 0.0), 1.0)
        return self.used * (x - (1 - self.k) * x * x / 2) / self.rho_bar

    def angle(self, x: float) -> float:
        return (self.revs * x) % 1.0

    def stream_s(self, x0: float, x1: float) -> float:
        """Media time to stream from x0 to x1 (x1 ≥ x0)."""
        return (x1 - x0) * self.revs * self.t_rev

    def rate_bytes_s(self, x: float, p: DriveProfile) -> float:
        return p.outer_mb_s * 1e6 * (1 - (1 - self.k) * x)


# ------------------------------------------------------------------ commands and counters

@dataclass(eq=False)
class Op:
    """One command to one member. `on_done(t)` fires when the host may see it complete (for a cached
    write: when the cache accepted it); the drive keeps destaging it afterwards."""

    lba: int
    nbytes: int
    write: bool
    on_done: Callable[[float], None]
    t_submit: float = 0.0
    x: float = 0.0
    angle: float = 0.0
    x_end: float = 0.0
    destage: bool = False
    svc: str = ""        # how it was served: "media" (positioned), "hit" (buffer), "stream" (read-ahead)
    eta: Callable[[float], None] | None = None   # told the completion time as soon as it is fixed


SEEK_BINS = 24   # bin 0: no seek; bin i ≥ 1: 2^(i−1) ≤ d < 2^i cylinders (last bin open-ended)


@dataclass
class Counters:
    """Host-visible counters of one member or one array (units in names)."""

    name: str
    reads: int = 0
    writes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    busy_s: float = 0.0
    queue_depth: int = 0          # commands outstanding now (queued + in service)
    queue_depth_max: int = 0
    qd_integral: float = 0.0      # ∫ queue_depth dt, for the time-averaged queue depth
    seek_hist: list[int] = field(default_factory=lambda: [0] * SEEK_BINS)
    seek_cyl_total: float = 0.0
    cache_hits: int = 0
    _t_last: float = 0.0

    def qd_change(self, t: float, delta: int) -> None:
        self.qd_integral += self.queue_depth * max(0.0, t - self._t_last)
        self._t_last = max(self._t_last, t)
        self.queue_depth += delta
        self.queue_depth_max = max(self.queue_depth_max, self.queue_depth)

    def seek(self, d: float) -> None:
        self.seek_cyl_total += d
        i = 0 if d < 0.5 else min(SEEK_BINS - 1, 1 + int(math.log2(max(d, 1.0))))
        self.seek_hist[i] += 1

    def done(self, write: bool, nbytes: int) -> None:
        if write:
            self.writes += 1
            self.bytes_written += nbytes
        else:
            self.reads += 1
            self.bytes_read += nbytes

    def snapshot(self, t: float) -> dict:
        integral = self.qd_integral + self.queue_depth * max(0.0, t - self._t_last)
        return {
            "name": self.name, "reads": self.reads, "writes": self.writes,
            "bytes_read": self.bytes_read, "bytes_written": self.bytes_written,
            "busy_s": round(self.busy_s, 6), "utilization": round(self.busy_s / t, 4) if t > 0 else 0.0,
            "queue_depth": self.queue_depth, "queue_depth_max": self.queue_depth_max,
            "queue_depth_mean": round(integral / t, 4) if t > 0 else 0.0,
            "seek_hist_log2_cyl": list(self.seek_hist),
            "seek_cyl_mean": round(self.seek_cyl_total / max(1, sum(self.seek_hist)), 2),
            "cache_hits": self.cache_hits,
        }


class Member:
    """Interface of one simulated device (drive, SSD, zero-latency): the Simulator calls these."""

    name: str
    counters: Counters

    def submit(self, op: Op, t: float) -> None:
        raise NotImplementedError

    def next_time(self) -> float | None:
        raise NotImplementedError

    def fire(self, t: float) -> None:
        raise NotImplementedError

    def flush(self, t: float, on_done: Callable[[float], None], eta: Callable[[float], None] | None = None) -> None:
        """Complete a cache flush: at once here (nothing cached). `eta`, if given, is told the completion time as
        soon as it is fixed, before on_done."""
        if eta is not None:
            eta(t)
        on_done(t)

    def estimate_free(self, t: float, lba: int) -> float:
        """When this member could start serving a command at `lba` (for RAID1 read balancing)."""
        return t


# ------------------------------------------------------------------ the drive

class Disk(Member):
    """A mechanical drive: NCQ queue of up to `queue_depth` commands served by SPTF, C-LOOK or FIFO,
    optional write-back cache (writes acknowledged on arrival, destaged later by the same scheduler),
    and a read-ahead stream (after a read the head keeps reading the following sectors while idle)."""

    def __init__(self, p: DriveProfile, used_bytes: int, name: str):
        self.p, self.name = p, name
        self.geo = Geometry(p, used_bytes)
        src = f"profile {p.name}"
        self.seek_r = fit_seek_curve(p.seek_read, p.cylinders, p.short_seek_fraction, src, "seek_read")
        self.seek_w = fit_seek_curve(p.seek_write, p.cylinders, p.short_seek_fraction, src, "seek_write")
        # estimate_free's cost of one queued random command: about half a revolution plus a third-stroke seek.
        # Computed once: the mean seek integrates the curve at 2001 points (~0.7 ms of CPU), and a RAID1 read
        # asks both members for an estimate under the emulator's lock — per command, it made every mirrored
        # read ~1.4 ms late to its own simulated arrival (issue 9: 16-26 % emulator lateness on raid1_10k)
        self.queued_cmd_s = self.geo.t_rev / 2 + self.seek_r.mean_ms(1.0) / 1e3 / 2
        self.overhead = p.overhead_ms / 1e3
        self.iface = p.interface_mb_s * 1e6
        self.counters = Counters(name)
        self.queue: list[Op] = []          # admitted to the reorder window
        self.overflow: deque[Op] = deque()  # beyond queue_depth: waits in the host adapter, FIFO
        self.dirty: list[Op] = []           # cached writes awaiting destage (reordered with the queue)
        self.dirty_bytes = 0
        self.blocked: deque[Op] = deque()   # writes waiting for cache space
        self.acks: list[tuple[float, int, Op]] = []
        self._seq = 0
        self.current: Op | None = None
        self.busy_until = 0.0
        self.head_x = 0.0
        # flushes waiting for the destage to end: (on_done, eta)
        self.flush_waiters: list[tuple[Callable[[float], None], Callable[[float], None] | None]] = []
        # flushes with nothing to destage, answered after the command overhead: (t_done, seq, on_done), a heap
        self.flush_acks: list[tuple[float, int, Callable[[float], None]]] = []
        # read-ahead stream: buffer holds [ra_start, position) where position advances at media rate
        # from (ra_x, ra_t) until ra_limit_x, or is frozen once the head leaves for another command;
        # ra_start follows the reader (the last read served from the stream).
        self.ra_start = -1.0
        self.ra_x = 0.0
        self.ra_t = 0.0
        self.ra_limit_x = 0.0
        self.ra_frozen = True

    # -- positioning

    def _prepare(self, op: Op) -> None:
        g = self.geo
        op.x = g.x_of(op.lba)
        op.x_end = g.x_of(op.lba + op.nbytes)
        op.angle = g.angle(op.x)

    def positioning(self, op: Op, t: float, head_x: float) -> tuple[float, float]:
        """(start of transfer, seek distance in cylinders) for `op` dispatched at t with the head at x."""
        d = abs(op.x - head_x) * self.geo.cylinders
        curve = self.seek_w if op.write else self.seek_r
        t_cmd = max(t, op.t_submit + self.overhead)
        t1 = t_cmd + curve.ms(d) / 1e3
        t_rev = self.geo.t_rev
        frac = (op.angle - t1 / t_rev) % 1.0
        if frac > 1.0 - 1e-9:
            frac = 0.0   # floating-point residue of an exactly contiguous block, not a missed revolution
        return t1 + frac * t_rev, d

    def _ra_position_x(self, t: float) -> float:
        if self.ra_frozen:
            return self.ra_limit_x
        return min(self.ra_limit_x, self.ra_x + (t - self.ra_t) / (self.geo.revs * self.geo.t_rev))

    def _ra_freeze(self, t: float) -> None:
        if not self.ra_frozen:
            self.ra_limit_x = self._ra_position_x(t)
            self.head_x = self.ra_limit_x
            self.ra_frozen = True

    # -- Member interface

    def submit(self, op: Op, t: float) -> None:
        op.t_submit = t
        self._prepare(op)
        self.counters.qd_change(t, +1)
        if op.write and self.p.write_cache:
            if self.dirty_bytes + op.nbytes <= self.p.write_cache_bytes:
                self._accept_cached(op, t)
            else:
                self.blocked.append(op)
        elif len(self.queue) < self.p.queue_depth:
            self.queue.append(op)
        else:
            self.overflow.append(op)
        if self.current is None:
            self._dispatch(t)

    def _accept_cached(self, op: Op, t: float) -> None:
        self.dirty_bytes += op.nbytes
        self._seq += 1
        t_ack = max(t, op.t_submit) + self.overhead + op.nbytes / self.iface
        heapq.heappush(self.acks, (t_ack, self._seq, op))
        if op.eta is not None:
            op.eta(t_ack)
        destage = Op(op.lba, op.nbytes, True, self._destaged, t, op.x, op.angle, op.x_end, destage=True)
        self.dirty.append(destage)

    def _destaged(self, t: float) -> None:
        pass   # bookkeeping happens in fire(); the host already saw the ack

    def next_time(self) -> float | None:
        cands = []
        if self.current is not None:
            cands.append(self.busy_until)
        if self.acks:
            cands.append(self.acks[0][0])
        if self.flush_acks:
            cands.append(self.flush_acks[0][0])
        return min(cands) if cands else None

    def fire(self, t: float) -> None:
        op: Op | None
        # a flush's answer first among this drive's events at the same time (the Simulator's own heap, before
        # 2026-11-27, answered it before every member's events at that time; a flush's completion changes no
        # member's state, so only the order of completions reported at one instant can differ)
        if self.flush_acks and self.flush_acks[0][0] <= min(
                self.busy_until if self.current is not None else math.inf,
                self.acks[0][0] if self.acks else math.inf):
            _, _, answer = heapq.heappop(self.flush_acks)
            answer(t)
            return
        if self.acks and (self.current is None or self.acks[0][0] <= self.busy_until):
            _, _, op = heapq.heappop(self.acks)
            self.counters.qd_change(t, -1)
            self.counters.done(True, op.nbytes)
            op.on_done(t)
            return
        op = self.current
        assert op is not None
        self.current = None
        if op.destage:
            self.dirty_bytes -= op.nbytes
            while self.blocked and self.dirty_bytes + self.blocked[0].nbytes <= self.p.write_cache_bytes:
                self._accept_cached(self.blocked.popleft(), t)
            if not self.dirty and self.flush_waiters:
                waiters, self.flush_waiters = self.flush_waiters, []
                for w, eta in waiters:
                    if eta is not None:
                        eta(t)
                    w(t)
        else:
            self.counters.qd_change(t, -1)
            self.counters.done(op.write, op.nbytes)
            if not op.write and self.p.readahead_bytes:
                limit = self.geo.x_of(op.lba + op.nbytes + self.p.readahead_bytes)
                if op.svc == "media":
                    # a new stream: the head keeps reading ahead from where this read ended
                    self.ra_start = op.lba
                    self.ra_x, self.ra_t, self.ra_frozen = op.x_end, t, False
                    self.ra_limit_x = limit
                else:
                    # a buffer hit or stream continuation. The segment now begins at what was just served: a drive's
                    # read-ahead segment is a ring that refills ahead of the reader, so what lies behind the reader
                    # is overwritten, not kept. The stream reads on past it only while the head is still on it: once
                    # the head has left (frozen), the buffer holds what was read before it left and nothing more.
                    # (Before 2026-11-26 a hit extended even a frozen window by `readahead_bytes`, and the window
                    # never lost its start: after a sequential fill one member's "buffer" held its whole share of a
                    # volume, and random reads there were served as hits.)
                    self.ra_start = max(self.ra_start, op.lba)
                    if not self.ra_frozen:
                        self.ra_limit_x = max(self.ra_limit_x, limit)
            op.on_done(t)
        if self.current is None:   # on_done may have submitted (and so dispatched) a command already
            self._dispatch(t)

    def _choose(self, t: float) -> Op | None:
        cands = self.queue + self.dirty
        if not cands:
            return None
        oldest = min(cands, key=lambda o: o.t_submit)
        if self.p.scheduler == "fifo" or t - oldest.t_submit > self.p.starvation_ms / 1e3:
            return oldest
        if self.p.scheduler == "clook":
            ahead = [o for o in cands if o.x >= self.head_x]
            return min(ahead or cands, key=lambda o: (o.x, o.t_submit))
        head = self.head_x
        return min(cands, key=lambda o: (self.positioning(o, t, head)[0], o.t_submit))

    def _dispatch(self, t: float) -> None:
        op = self._choose(t)
        if op is None:
            return
        if op.destage:
            self.dirty.remove(op)
        else:
            self.queue.remove(op)
            if self.overflow:
                self.queue.append(self.overflow.popleft())
        self.current = op
        g = self.geo
        # read-ahead hit: the data is in the buffer, or the stream reaches it without repositioning
        if not op.write and self.ra_start >= 0 and self.ra_start <= op.lba:
            pos_x = self._ra_position_x(t)
            if op.x <= pos_x + 1e-12:
                t_cmd = max(t, op.t_submit + self.overhead)
                if op.x_end <= pos_x + 1e-12:
                    op.svc = "hit"
                    self.counters.cache_hits += 1
                    self._start(op, t, t_cmd + op.nbytes / self.iface, None)
                    return
                if not self.ra_frozen:
                    op.svc = "stream"
                    self.ra_limit_x = max(self.ra_limit_x, op.x_end)
                    self._start(op, t, max(t_cmd, self.ra_t + g.stream_s(self.ra_x, op.x_end)), None)
                    return
        self._ra_freeze(t)
        op.svc = "media"
        t_xfer, d = self.positioning(op, t, self.head_x)
        end = t_xfer + g.stream_s(op.x, op.x_end)
        self.head_x = op.x_end
        self._start(op, t, end, d)

    def _start(self, op: Op, t: float, end: float, d: float | None) -> None:
        if d is not None:
            self.counters.seek(d)
        self.counters.busy_s += end - t
        self.busy_until = end
        if op.eta is not None and not op.destage:
            op.eta(end)   # a dispatched command is never preempted: its completion time is now fixed

    def flush(self, t: float, on_done: Callable[[float], None], eta: Callable[[float], None] | None = None) -> None:
        """With nothing to destage the drive answers after its command overhead, an event of its own (flush_acks;
        the head is not involved); otherwise when the destage ends. `eta` is told the time when it is fixed: at once
        in the first case, at the destage's end (as it completes) in the second."""
        if not self.dirty and (self.current is None or not self.current.destage):
            t_done = t + self.overhead
            if eta is not None:
                eta(t_done)
            if t_done <= t:   # no overhead (a profile may say 0): answered now, as any member without a cache
                on_done(t_done)
                return
            self._seq += 1
            heapq.heappush(self.flush_acks, (t_done, self._seq, on_done))
        else:
            self.flush_waiters.append((on_done, eta))

    def estimate_free(self, t: float, lba: int) -> float:
        busy = max(0.0, self.busy_until - t) if self.current is not None else 0.0
        pending = len(self.queue) + len(self.overflow) + len(self.dirty)
        x = self.geo.x_of(lba)
        return t + busy + pending * self.queued_cmd_s + self.seek_r.ms(abs(x - self.head_x) * self.geo.cylinders) / 1e3


# ------------------------------------------------------------------ flash and zero-latency members

class Ssd(Member):
    """Up to `channels` commands in parallel, each taking latency + nbytes/rate; FIFO beyond that."""

    def __init__(self, p: SsdProfile, used_bytes: int, name: str):
        self.p, self.name = p, name
        self.counters = Counters(name)
        self.running: list[tuple[float, int, Op]] = []
        self.waiting: deque[Op] = deque()
        self._seq = 0

    def _service(self, op: Op) -> float:
        if op.write:
            return self.p.write_us / 1e6 + op.nbytes / (self.p.write_mb_s * 1e6)
        return self.p.read_us / 1e6 + op.nbytes / (self.p.read_mb_s * 1e6)

    def _start(self, op: Op, t: float) -> None:
        s = self._service(op)
        self.counters.busy_s += s / self.p.channels
        self._seq += 1
        heapq.heappush(self.running, (t + s, self._seq, op))
        if op.eta is not None:
            op.eta(t + s)

    def submit(self, op: Op, t: float) -> None:
        op.t_submit = t
        self.counters.qd_change(t, +1)
        self.counters.seek(0)
        if len(self.running) < self.p.channels:
            self._start(op, t)
        else:
            self.waiting.append(op)

    def next_time(self) -> float | None:
        return self.running[0][0] if self.running else None

    def fire(self, t: float) -> None:
        _, _, op = heapq.heappop(self.running)
        self.counters.qd_change(t, -1)
        self.counters.done(op.write, op.nbytes)
        if self.waiting:
            self._start(self.waiting.popleft(), t)
        op.on_done(t)

    def estimate_free(self, t: float, lba: int) -> float:
        return t + len(self.waiting) * self._service(Op(lba, 4096, False, lambda _t: None)) / self.p.channels


class ZeroDevice(Member):
    """Completes every command at its arrival time."""

    def __init__(self, name: str):
        self.name = name
        self.counters = Counters(name)

    def submit(self, op: Op, t: float) -> None:
        self.counters.done(op.write, op.nbytes)
        op.on_done(t)

    def next_time(self) -> float | None:
        return None

    def fire(self, t: float) -> None:  # pragma: no cover - never scheduled
        pass
