"""Certified data: the C model core (spindle_core.c, what the nbdkit plugin runs) against the Python reference
(arrays.Simulator), request by request.

One seeded request trace per device kind (arrival times, offsets, sizes, reads, writes, flushes: bursts that queue,
sequential runs that hit the read-ahead, large commands that split across stripe units, rows and extents) is
replayed through both in simulated time, as the plugin drives them: advance to the arrival, submit, collect. Both
must complete the same commands, each within 1 µs of the other (they compute the same doubles, so in practice
exactly), tell the same commands' completion times ahead (etas, which must equal the completions), and end with
identical counters. No wall time is measured: the core is compiled into the test's temporary directory and called
through ctypes.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import pytest

from snaptax.spindle.arrays import Simulator
from snaptax.spindle.cmodel import CSimulator
from snaptax.spindle.cspec import flat_spec
from snaptax.spindle.profiles import DeviceSpec, DiskSpec, ZeroProfile
from snaptax.spindle.rigfiles import disk, parse_device

TOLERANCE_S = 1e-6


@pytest.fixture(scope="module")
def core(spindle_core):
    return spindle_core


@dataclass(frozen=True)
class Case:
    name: str
    spec: DeviceSpec
    capacity: int
    commands: int
    mean_gap_s: float        # mean time between arrivals (bursts of BURST at once make queues either way)
    tail_s: float = 1.0      # simulated time after the last arrival (tier cycles and destages keep going)


def _dev(raw: dict) -> DeviceSpec:
    return parse_device(raw, "test_cmodel")


TIER = {"kind": "tier", "ssd": {"kind": "raid1", "profile": "ssd_sas"},
        "hdd": {"kind": "raid5", "profile": "sas10k", "members": 4, "stripe_unit": "64K"},
        "extent": "4M", "ssd_fraction": 0.1, "cycle": "0.5s", "migration_mb_s": 400, "migration_chunk": "1M"}

CASES = [
    Case("sas10k", disk("sas10k"), 1 << 30, 1500, 4e-3),
    Case("sas15k", disk("sas15k"), 1 << 30, 1500, 3e-3),
    Case("nlsas7k2", disk("nlsas7k2"), 1 << 30, 1500, 6e-3),
    Case("sas10k_write_cache", _dev({"kind": "disk", "profile": "sas10k",
                                     "overrides": {"write_cache": True, "write_cache_bytes": 1 << 20}}),
         1 << 30, 1500, 3e-3),
    Case("sas10k_clook_qd4", _dev({"kind": "disk", "profile": "sas10k",
                                   "overrides": {"scheduler": "clook", "queue_depth": 4}}), 1 << 30, 1000, 10e-3),
    Case("sas10k_fifo", _dev({"kind": "disk", "profile": "sas10k", "overrides": {"scheduler": "fifo"}}),
         1 << 30, 1000, 12e-3),
    Case("raid1_10k", _dev({"device": "raid1_10k"}), 1 << 30, 1500, 3e-3),
    Case("raid5_15k_6", _dev({"device": "raid5_15k_6"}), 1 << 30, 1500, 2e-3),
    Case("sas_pool", _dev({"device": "sas_pool"}), 1 << 30, 1000, 2e-3),
    Case("tier", _dev(TIER), 256 << 20, 2500, 4e-3, tail_s=2.0),
    Case("tier_budget_window", _dev({**TIER, "window_cycles": 2, "max_migrations_per_cycle": 3,
                                     "new_allocation": "ssd"}), 256 << 20, 2500, 4e-3, tail_s=2.0),
    # array controllers' write caches (ctrlcache.py): small caches, so that writes stall and destages queue
    Case("raid1_10k_cache", _dev({"kind": "raid1", "profile": "sas10k",
                                  "cache": {"size": "8M", "battery_backed": True, "destage_depth": 16}}),
         1 << 30, 1500, 3e-3, tail_s=3.0),
    Case("raid1_10k_cache_write_through", _dev({"kind": "raid1", "profile": "sas10k",
                                                "cache": {"size": "1M", "battery_backed": False}}),
         1 << 30, 1000, 3e-3),
    Case("raid5_15k_6_cache", _dev({"kind": "raid5", "profile": "sas15k", "members": 6, "stripe_unit": "64K",
                                    "cache": {"size": "16M", "battery_backed": True, "destage_depth": 16}}),
         1 << 30, 1500, 2e-3, tail_s=3.0),
    Case("raid5_15k_6_cache_watermark", _dev({"kind": "raid5", "profile": "sas15k", "members": 6,
                                              "stripe_unit": "64K",
                                                        "cache": {"size": "8M", "battery_backed": True,
                                                        "destage": "watermark", "high_watermark": 0.6,
                                                        "low_watermark": 0.2, "destage_depth": 16}}),
         1 << 30, 1500, 2e-3, tail_s=3.0),
    Case("raid5_15k_6_cache_unprotected", _dev({"kind": "raid5", "profile": "sas15k", "members": 6,
                                                "stripe_unit": "64K",
                                                "cache": {"size": "8M", "battery_backed": False,
                                                          "write_back_unprotected": True,
                                                          "destage": "watermark", "destage_depth": 16}}),
         1 << 30, 1500, 2e-3, tail_s=3.0),
    Case("disk_cache_small_segment", _dev({"kind": "disk", "profile": "sas10k",
                                           "cache": {"size": "2M", "battery_backed": True, "segment": "64K",
                                                     "destage_depth": 2, "overhead_us": 20}}),
         1 << 30, 1000, 4e-3, tail_s=3.0),
    Case("tier_cache", _dev({**TIER, "cache": {"size": "8M", "battery_backed": True, "destage_depth": 16}}),
         256 << 20, 2500, 4e-3, tail_s=3.0),
    Case("ssd", disk("ssd_sas"), 1 << 30, 2000, 30e-6),
    Case("zero", DiskSpec(ZeroProfile()), 1 << 30, 500, 1e-4),
]

BURST = 8
SIZES = (4096,) * 8 + (8192, 65536, 262144, 1 << 20)


def trace(case: Case, seed: int = 1) -> list[tuple[float, str, int, int]]:
    """(arrival time, kind, offset, length) in arrival order: Poisson arrivals, every 50th a burst of BURST at
    one instant; 3 % flushes, 40 % writes; 30 % of commands continue the previous one sequentially."""
    rng = random.Random(seed)
    t, prev_end, out = 0.0, 0, []
    while len(out) < case.commands:
        t += rng.expovariate(1 / case.mean_gap_s)
        for _ in range(BURST if rng.random() < 0.02 else 1):
            r = rng.random()
            kind = "flush" if r < 0.03 else "write" if r < 0.43 else "read"
            if kind == "flush":
                out.append((t, kind, 0, 0))
                continue
            bs = rng.choice(SIZES)
            off = prev_end if rng.random() < 0.3 and prev_end + bs <= case.capacity else \
                rng.randrange((case.capacity - bs) // 4096) * 4096
            prev_end = off + bs
            out.append((t, kind, off, bs))
    return out[:case.commands]


@dataclass
class Replay:
    done: dict[int, float]
    eta_tokens: set[int]
    counters: dict[str, Any]


def replay(sim: Any, tr: list[tuple[float, str, int, int]], tail_s: float) -> Replay:
    done: dict[int, float] = {}
    etas: set[int] = set()

    def collect(pairs: list) -> None:
        for token, t in pairs:
            assert token not in done, f"command {token} completed twice"
            done[token] = t

    def take_etas() -> None:
        for item in sim.take_etas():
            etas.add(item[0] if isinstance(item, tuple) else item)

    for token, (t, kind, off, length) in enumerate(tr):
        collect(sim.advance(t))
        sim.submit(token, kind, off, length, t)
        collect(sim.take_done())
        take_etas()
    collect(sim.advance(tr[-1][0] + tail_s))
    take_etas()
    return Replay(done, etas, sim.counters())


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two counters documents differ (exactly: both print the same rounded doubles)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k}: only in one" for k in sorted(set(a) ^ set(b))]
        return out + [d for k in a if k in b for d in differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} vs {b!r}"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_c_core_completes_every_command_when_the_python_model_does(core, case):
    tr = trace(case)
    py = replay(Simulator(case.spec, case.capacity, case.name), tr, case.tail_s)
    with CSimulator(case.spec, case.capacity, case.name, library=core) as csim:
        c = replay(csim, tr, case.tail_s)
    assert len(py.done) > 0.9 * len(tr)            # the trace is served, not stuck in a queue
    assert set(c.done) == set(py.done)
    worst = max(abs(c.done[k] - py.done[k]) for k in py.done)
    assert worst <= TOLERANCE_S, f"completion times differ by up to {worst * 1e6:.3f} µs"
    assert c.eta_tokens == py.eta_tokens
    assert differences(py.counters, c.counters) == []


def test_the_c_core_tells_each_completion_time_before_it_completes(core):
    case = next(c for c in CASES if c.name == "raid5_15k_6")
    tr = trace(case, seed=2)
    with CSimulator(case.spec, case.capacity, case.name, library=core) as csim:
        etas: dict[int, float] = {}
        done: dict[int, float] = {}

        def collect(completed: list[tuple[int, float]]) -> None:
            for tok, t_eta in csim.take_etas():
                assert tok not in done               # fixed ahead, never after an earlier batch completed it
                etas[tok] = t_eta
            done.update(completed)

        for token, (t, kind, off, length) in enumerate(tr):
            collect(csim.advance(t))
            csim.submit(token, kind, off, length, t)
            collect(csim.take_done())
        collect(csim.advance(tr[-1][0] + case.tail_s))
    assert len(etas) > 0.9 * len(tr)
    assert all(etas[k] == done[k] for k in etas)


def test_the_comparison_sees_a_one_command_change(core):
    """The test above can fail: one command moved by one block changes the schedule and the counters."""
    case = CASES[0]
    tr = trace(case)
    t, kind, off, length = tr[10]
    moved = [*tr[:10], (t, kind, off + 4096 if kind != "flush" else off, length), *tr[11:]]
    py = replay(Simulator(case.spec, case.capacity, case.name), tr, case.tail_s)
    with CSimulator(case.spec, case.capacity, case.name, library=core) as csim:
        c = replay(csim, moved if kind != "flush" else tr[:-1], case.tail_s)
    assert set(c.done) != set(py.done) or max(abs(c.done[k] - py.done[k]) for k in py.done) > TOLERANCE_S \
        or differences(py.counters, c.counters)


def test_the_flat_spec_carries_the_python_models_own_numbers():
    from snaptax.spindle.model import Disk

    spec = disk("sas10k")
    text = flat_spec(spec, 1 << 30, "d")
    sim = Simulator(spec, 1 << 30, "d")
    member = sim.members[0]
    assert isinstance(member, Disk)
    values = dict(line.split("=", 1) for line in text.splitlines())
    assert float(values["m0.seek_r.b"]) == member.seek_r.b           # repr round-trips the double exactly
    assert float(values["m0.revs"]) == member.geo.revs
    assert values["v0.kind"] == "single" and values["m0.name"] == "d"
    with pytest.raises(ValueError, match="newline"):
        flat_spec(spec, 1 << 30, "bad\nname")


def test_a_bad_spec_or_command_is_refused_in_one_line(core):
    import ctypes

    from snaptax.spindle import cmodel

    lib = cmodel.load(core)
    err = ctypes.create_string_buffer(256)
    assert not lib.spindle_sim_new(b"format=snaptax-spindle 1\nname=x\n", err, len(err))
    assert err.value.decode() == "spindle spec: missing key capacity"
    with CSimulator(disk("sas10k"), 1 << 20, "x", library=core) as csim:
        with pytest.raises(ValueError, match="outside the device"):
            csim.submit(1, "read", 1 << 20, 4096, 0.0)
        assert csim.next_event_time() is None and math.isfinite(csim.now)
