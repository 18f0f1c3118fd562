"""What the model predicts, without real time: closed-loop runs of the Simulator (stdlib only).

A closed loop keeps `qd` commands outstanding, as fio does with iodepth=qd: each completion at t is
replaced at once (at t) by a new command at a uniformly random `bs`-aligned offset within the span.
Deterministic for a given seed.
"""
from __future__ import annotations

import random
from collections.abc import Hashable
from dataclasses import dataclass

from .arrays import Simulator
from .profiles import DeviceSpec


@dataclass(frozen=True)
class LoopResult:
    iops: float
    mean_latency_s: float
    ios: int
    sim_s: float


def closed_loop(spec: DeviceSpec, capacity: int, *, qd: int, write: bool = False, bs: int = 4096,
                span: float = 1.0, offset: int = 0, ios: int = 4000, warmup: int = 200,
                seed: int = 1) -> LoopResult:
    """Random `bs` I/O over [offset, offset + span·capacity) at queue depth `qd`; IOPS over `ios` completions
    after `warmup` completions (so the queue has filled and the head position is random)."""
    rng = random.Random(seed)
    blocks = max(1, int(span * (capacity - offset)) // bs)
    sim = Simulator(spec, capacity)
    kind = "write" if write else "read"
    issued: dict[Hashable, float] = {}
    next_token = 0

    def issue(t: float) -> None:
        nonlocal next_token
        issued[next_token] = t
        sim.submit(next_token, kind, offset + rng.randrange(blocks) * bs, bs, t)
        next_token += 1

    for _ in range(qd):
        issue(0.0)
    completed, t_start, lat_sum = 0, None, 0.0
    pending = sim.take_done()
    while completed < warmup + ios:
        if not pending:
            nt = sim.next_event_time()
            if nt is None:
                raise RuntimeError("simulator idle with commands outstanding")
            pending = sim.advance(nt)
            continue
        token, t = pending.pop(0)
        completed += 1
        if completed == warmup:
            t_start = t
        elif completed > warmup:
            lat_sum += t - issued[token]
        del issued[token]
        issue(t)
        pending += sim.take_done()
    t_end = sim.now
    assert t_start is not None or warmup == 0
    elapsed = t_end - (t_start or 0.0)
    return LoopResult(ios / elapsed, lat_sum / ios, ios, elapsed)


def qd1_trace(spec: DeviceSpec, capacity: int, *, n: int, span: float = 1.0, bs: int = 4096, gap_s: float = 0.0,
              jitter_s: float = 0.0, tail_s: float = 0.0, seed: int = 1) -> tuple[list[int], list[float]]:
    """A QD1 random-read trace as a client with turnaround `gap_s` (± Gaussian `jitter_s`, plus an exponential
    delay of mean `tail_s`: a real client is late more often than early; never negative) sees it: (offsets,
    service times) in issue order — what the per-request calibration fit reads from fio's log."""
    rng = random.Random(seed)
    blocks = max(1, int(span * capacity) // bs)
    sim = Simulator(spec, capacity)
    offsets, service = [], []
    t = 0.0
    for i in range(n):
        off = rng.randrange(blocks) * bs
        sim.advance(t)
        sim.submit(i, "read", off, bs, t)
        done = sim.take_done()
        while not done:
            nt = sim.next_event_time()
            assert nt is not None    # the read just submitted is outstanding
            done = sim.advance(nt)
        t_done = done[0][1]
        offsets.append(off)
        service.append(t_done - t)
        t = t_done + max(0.0, rng.gauss(gap_s, jitter_s) + (rng.expovariate(1 / tail_s) if tail_s else 0.0))
    return offsets, service
