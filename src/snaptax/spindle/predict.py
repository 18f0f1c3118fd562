"""What the model predicts, without real time: closed-loop runs of the Simulator (stdlib only).

A closed loop keeps `iodepth` commands outstanding, as fio does: each completion at t is
replaced at once (at t) by a new command at a uniformly random `bs`-aligned offset within the span.
Deterministic for a given seed.
"""
from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from .arrays import Simulator
from .profiles import DeviceSpec


@dataclass(frozen=True)
class LoopResult:
    iops: float
    mean_latency_s: float
    ios: int
    sim_s: float


@dataclass(frozen=True)
class Region:
    """A byte range [offset, offset + length) of the device and the share `weight` of the commands that land in
    it (uniformly at random, `bs`-aligned)."""
    offset: int
    length: int
    weight: float = 1.0


def closed_loop_mix(spec: DeviceSpec, capacity: int, *, iodepth: int, regions: Sequence[Region],
                    read_fraction: float = 1.0, bs: int = 4096, ios: int = 4000, warmup: int = 200,
                    seed: int = 1) -> LoopResult:
    """Random `bs` I/O over a layout of regions (a command picks a region by weight, then a uniformly random
    aligned offset inside it), a share `read_fraction` (0 … 1) of them reads, at queue depth `iodepth`; IOPS over `ios`
    completions after `warmup`. With one region and read_fraction 0 or 1 it draws exactly the random numbers of a
    single-region loop, so `closed_loop` is this function."""
    if not regions or any(r.length < bs or r.weight < 0 for r in regions) or sum(r.weight for r in regions) <= 0:
        raise ValueError("regions: each at least one block long, weights non-negative, not all zero")
    if not 0.0 <= read_fraction <= 1.0:
        raise ValueError(f"read_fraction must lie in [0, 1], got {read_fraction}")
    rng = random.Random(seed)
    blocks = [max(1, r.length // bs) for r in regions]
    total_weight = sum(r.weight for r in regions)
    sim = Simulator(spec, capacity)
    issued: dict[Hashable, float] = {}
    next_token = 0

    def where() -> int:
        i = 0
        if len(regions) > 1:
            x = rng.random() * total_weight
            while i < len(regions) - 1 and x >= regions[i].weight:
                x -= regions[i].weight
                i += 1
        return regions[i].offset + rng.randrange(blocks[i]) * bs

    def kind() -> str:
        if read_fraction in (0.0, 1.0):
            return "read" if read_fraction == 1.0 else "write"
        return "read" if rng.random() < read_fraction else "write"

    def issue(t: float) -> None:
        nonlocal next_token
        issued[next_token] = t
        k = kind()
        sim.submit(next_token, k, where(), bs, t)
        next_token += 1

    for _ in range(iodepth):
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


def closed_loop(spec: DeviceSpec, capacity: int, *, iodepth: int, write: bool = False, bs: int = 4096,
                span: float = 1.0, offset: int = 0, ios: int = 4000, warmup: int = 200,
                seed: int = 1) -> LoopResult:
    """Random `bs` I/O over [offset, offset + span·capacity) at queue depth `iodepth`; IOPS over `ios` completions
    after `warmup` completions (so the queue has filled and the head position is random)."""
    length = max(1, int(span * (capacity - offset)) // bs) * bs
    return closed_loop_mix(spec, capacity, iodepth=iodepth, regions=[Region(offset, length)],
                           read_fraction=0.0 if write else 1.0, bs=bs, ios=ios, warmup=warmup, seed=seed)


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
