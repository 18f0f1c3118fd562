"""A/B of the spindle emulator's release lateness between two source trees (e.g. main and a change).

    python tools/emulator_ab.py SRC_A SRC_B [--runtime 8] [--rounds 2]

For each workload below, and for each round, a fresh emulator from SRC_A and one from SRC_B (in the order AB, BA,
AB, …, so drift in the machine's state and order effects affect both alike) serve fio for `runtime` s; the mean
release lateness (µs: real time after the simulated completion at which replies leave) and fio's IOPS are printed
per tree. Holds the machine-wide measurement lock for each fio run (fio.run takes it); run nothing else meanwhile.
The environment passed on is PYTHONPATH and PATH only (the children's work files go to a temporary directory).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

# device name (rigs/spindles/devices.yaml), capacity, fio rw, block size, queue depth, extra fio options
WORKLOADS = (
    ("raid5_15k_6", 8 << 30, "randwrite", 64 << 10, 1, ()),
    ("raid1_10k", 4 << 30, "randrw", 4096, 16, (("rwmixread", "50"),)),
    ("sas_pool", 16 << 30, "randrw", 32 << 10, 16, (("rwmixread", "80"),)),
    ("sas10k", 1 << 30, "randread", 4096, 32, ()),
    # a flush after every write (NBD flushes): the emulator's answer to a flush with nothing to destage
    ("raid5_15k_6", 8 << 30, "randwrite", 64 << 10, 4, (("fsync", "1"),)),
)

ONE = r'''
import json, sys
from pathlib import Path
from snaptax import fio
from snaptax.host.procs import ProcessGroup
from snaptax.spindle.rigfiles import disk, named_devices, parse_device, profile_names
from snaptax.spindle.serve import SpindleDevice, fresh_counters, serve
name, cap, rw, bs, qd, extra, runtime, wd = json.loads(sys.argv[1])
spec = disk(name) if name in profile_names() else parse_device(named_devices()[name], "devices.yaml", name)
wd = Path(wd)
with ProcessGroup() as group, serve(group, SpindleDevice(spec, cap, wd, name)) as s:
    before = fresh_counters(s.counters)
    job = fio.FioJob(name=f"ab-{name}", rw=rw, bs=bs, iodepth=qd, size=cap, runtime_s=runtime, log_avg_msec=None,
                     randrepeat=True, extra=tuple(tuple(x) for x in extra))
    run = fio.run(job, fio.FioTarget("nbd", uri=s.uri), wd / "fio")
    after = fresh_counters(s.counters)
e0, e1 = before.get("emulator", {}), after.get("emulator", {})
n = e1["released"] - e0.get("released", 0)
if not n:
    sys.exit(f"{name}: the emulator released no command during the run")
late = (e1["release_late_s_sum"] - e0.get("release_late_s_sum", 0)) / n * 1e6
iops = sum(float(run.result["jobs"][0][d]["iops"]) for d in ("read", "write"))
print(json.dumps({"late_us": late, "iops": iops, "self_timed": e1.get("self_timed", 0)}))
'''


def one(src: str, w: tuple, runtime: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="ab-", dir="/var/tmp") as wd:
        arg = json.dumps([*w[:5], list(w[5]), runtime, wd])
        out = subprocess.run([sys.executable, "-c", ONE, arg], env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{w[0]} from {src} failed: {out.stderr.strip()[-2000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("src_a")
    ap.add_argument("src_b")
    ap.add_argument("--runtime", type=float, default=8.0)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    for w in WORKLOADS:
        for r in range(a.rounds):
            order = (("A", a.src_a), ("B", a.src_b))[:: 1 if r % 2 == 0 else -1]   # ABBA: order effects cancel
            res = dict(sorted((tag, one(src, w, a.runtime)) for tag, src in order))
            print(f"{w[0]:12s} {w[2]:9s} bs={w[3]:6d} qd={w[4]:2d} round {r}: "
                  + "  ".join(f"{t} late {v['late_us']:6.1f} us iops {v['iops']:7.1f}" for t, v in res.items()),
                  flush=True)


if __name__ == "__main__":
    main()
