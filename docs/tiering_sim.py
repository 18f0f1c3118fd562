"""Phase lengths for a `tiering` study, from the spindle Simulator alone (no nbdkit, no fio, no real time).

Reproduces the numbers in docs/tiering-design.md:
    flock /var/tmp/snaptax-measure.lock env PYTHONPATH=src python docs/tiering_sim.py [--qd 16] [--seed 1]

The workload is seed 002's IOmeter pattern (32 KiB, 80 % read, 90 % random) at a fixed queue depth, closed loop,
over a disk that stands for the seed's 100 GB VM disk scaled like the pool (16 GiB for 4.2 TB). The snapshot is a
toy redirect-on-write overlay (64 KiB clusters allocated in order in a never-written region; a first write to a
cluster copies the cluster from the base: one 64 KiB read + one 64 KiB write; no metadata I/O) and the
consolidation a toy commit (copy every allocated cluster back, one at a time, under the load). The toys give phase
*lengths* and where I/O lands, not the seed's ratios: the study measures those with the real engines.
"""
from __future__ import annotations

import argparse
import random
from collections.abc import Callable

from snaptax.spindle.arrays import Simulator, Tier
from snaptax.spindle.rigfiles import parse_device

GiB, MiB, KiB = 1 << 30, 1 << 20, 1 << 10
POOL = 16 * GiB
DISK = int(100e9 * POOL / 4.2e12) // MiB * MiB     # the seed's 100 GB VM disk, scaled like the pool: 390 MiB
BS = 32 * KiB
CLUSTER = 64 * KiB
DELTA_AT = 8 * GiB                                  # the overlay's region: never written before the snapshot


class Run:
    def __init__(self, device: str, qd: int, seed: int):
        self.sim = Simulator(parse_device({"device": device}, "rigs/spindles/devices.yaml"), POOL)
        self.tier = self.sim.volume if isinstance(self.sim.volume, Tier) else None
        self.rng = random.Random(seed)
        self.qd = qd
        self.token = 0
        self.seq = 0
        self.delta: dict[int, int] | None = None    # guest cluster -> delta offset (snapshot active)
        self.delta_next = DELTA_AT
        self.pending: dict[int, Callable[[float], None]] = {}

    # -- the guest's I/O, through the toy overlay when a snapshot is active

    def _raw(self, kind: str, off: int, n: int, t: float, then: Callable[[float], None]) -> None:
        self.token += 1
        self.pending[self.token] = then
        self.sim.submit(self.token, kind, off, n, t)

    def guest_io(self, t: float, then: Callable[[float], None]) -> None:
        if self.rng.random() < 0.9:
            blk = self.rng.randrange(DISK // BS)
        else:
            self.seq = (self.seq + 1) % (DISK // BS)
            blk = self.seq
        off = blk * BS
        write = self.rng.random() < 0.2
        if self.delta is None:
            self._raw("write" if write else "read", off, BS, t, then)
            return
        cl, within = divmod(off, CLUSTER)
        where = self.delta.get(cl)
        if not write:
            self._raw("read", off if where is None else where + within, BS, t, then)
        elif where is not None:
            self._raw("write", where + within, BS, t, then)
        else:                                        # first write to the cluster: copy it from the base
            dst = self.delta_next
            self.delta_next += CLUSTER
            self.delta[cl] = dst
            self._raw("read", cl * CLUSTER, CLUSTER, t,
                      lambda t2: self._raw("write", dst, CLUSTER, t2, then))

    def loop(self, t_end: float, sample: Callable[[float], None], extra: Callable[[float], bool] | None = None
             ) -> float:
        """Closed loop at `qd` until t_end; sample(t) once per simulated second; extra(t) may run a background
        job and returns False when it is done (the loop then stops)."""
        t = self.sim.now
        next_sample = int(t) + 1.0
        busy = [0]

        def again(t2: float) -> None:
            busy[0] -= 1
            if t2 < t_end:
                busy[0] += 1
                self.guest_io(t2, again)

        for _ in range(self.qd):
            busy[0] += 1
            self.guest_io(t, again)
        while busy[0] or self.pending:
            nt = self.sim.next_event_time()
            if nt is None:
                break
            while nt >= next_sample:
                sample(next_sample)
                next_sample += 1.0
                if extra is not None and not extra(next_sample - 1.0):
                    t_end = min(t_end, next_sample - 1.0)
            for token, t2 in self.sim.advance(nt):
                self.pending.pop(token)(t2)
        return self.sim.now

    def fill(self) -> None:
        """Write the disk once with 1 MiB commands (too large to count as heat), QD 4."""
        offs = list(range(0, DISK, MiB))
        left = [len(offs)]

        def next_fill(t: float) -> None:
            left[0] -= 1
            if offs:
                self._raw("write", offs.pop(0), MiB, t, next_fill)

        for _ in range(4):
            self._raw("write", offs.pop(0), MiB, 0.0, next_fill)
        while self.pending:
            nt = self.sim.next_event_time()
            for token, t2 in self.sim.advance(nt):
                self.pending.pop(token)(t2)

    def counters(self) -> dict:
        return self.sim.counters()["array"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--qd", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="tier_pool")
    args = ap.parse_args()
    r = Run(args.device, args.qd, args.seed)
    r.fill()
    print(f"disk {DISK / MiB:.0f} MiB ({DISK // (16 * MiB)} extents of 16 MiB); fill done at t={r.sim.now:.1f} s")
    prev = dict(r.counters())
    rows: list[tuple[float, str, float, float, int, int]] = []
    phase = ["learn"]

    def sample(t: float) -> None:
        c = r.counters()
        ios = c["reads"] + c["writes"] - prev["reads"] - prev["writes"]
        ssd = c.get("ssd_reads", 0) + c.get("ssd_writes", 0) - prev.get("ssd_reads", 0) - prev.get("ssd_writes", 0)
        rows.append((t, phase[0], ios, ssd / ios if ios else 0.0, c.get("promotions", 0), c.get("tier_cycles", 0)))
        prev.clear()
        prev.update(c)

    def show(name: str) -> None:
        sel = [x for x in rows if x[1] == name]
        if sel:
            iops = sum(x[2] for x in sel) / len(sel)
            print(f"{name:14s} {sel[0][0]:6.0f}-{sel[-1][0]:4.0f} s  mean IOPS {iops:7.0f}  "
                  f"p(SSD) first {sel[0][3]:.2f} last {sel[-1][3]:.2f}  promotions {sel[-1][4]}")

    t0 = r.sim.now
    cycle = r.tier.spec.cycle_s if r.tier else 120.0
    # learn: until 3 s in a row with p >= 0.98 (or 2 cycles)
    streak = [0]

    def learned(t: float) -> bool:
        streak[0] = streak[0] + 1 if rows and rows[-1][3] >= 0.98 else 0
        return streak[0] < 3 and t < t0 + 2 * cycle

    if r.tier:
        r.loop(t0 + 2 * cycle + 1, sample, learned)
        print(f"learned after {r.sim.now - t0:.0f} s of workload (first cycle end at {cycle:.0f} s device time)")
    show("learn")
    phase[0] = "initial"
    r.loop(r.sim.now + 15, sample)
    show("initial")
    # snapshot right after a cycle end, so the whole cycle is the snapshot's steady phase
    if r.tier:
        phase[0] = "wait-cycle"
        next_end = (r.tier.cycles + 1) * cycle
        r.loop(next_end + 0.5, sample)
    r.delta = {}
    t_snap = r.sim.now
    phase[0] = "snapshot"
    r.loop(t_snap + cycle * 1.4, sample)
    show("snapshot")
    for t, name, ios, p, prom, cyc in rows:
        if name == "snapshot" and int(t - t_snap) % 10 == 0:
            print(f"   snapshot +{t - t_snap:5.0f} s  IOPS {ios:6.0f}  p {p:.2f}  promotions {prom}  cycles {cyc}")
    delta_bytes = r.delta_next - DELTA_AT
    print(f"delta after {r.sim.now - t_snap:.0f} s: {delta_bytes / MiB:.0f} MiB in {len(r.delta)} clusters")


if __name__ == "__main__":
    main()
