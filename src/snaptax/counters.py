"""The catalogue of counters a measurement records: every name, its source, whether it differences, its unit.

A counter's name is `<source>.<name>`; the source says who counted:
  host      the rig device below every engine: what the "disk" received (loop device /sys/block stat, or the
            emulated spindle's array; `host.member<i>.*` are an emulated array's member drives)
  snapdev   a second rig device holding an engine's snapshots (as host, for that device)
  emulator  the emulated spindle's own timing (how late it released requests against its schedule)
  engine    the snapshot engine's internals (copies, metadata operations, pool usage)
  guest     block devices inside a TCG guest (the LV fio ran against)
A `counter` is cumulative and is differenced over a measurement; a `gauge` is a level (space used, a percentage)
and is recorded before and after, never differenced. Constants (page size, chunk size) are not counters: they
belong in the engine's describe().

Every engine reports the space its snapshots take as the gauge `engine.snapshot_allocated_bytes`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["counter", "gauge"]


@dataclass(frozen=True)
class CounterSpec:
    pattern: str        # full-match regular expression over the dotted name
    kind: Kind
    unit: str
    doc: str


CATALOGUE: tuple[CounterSpec, ...] = (
    # host: the rig device
    CounterSpec(r"host\.(reads|writes)", "counter", "requests", "requests the rig device completed"),
    CounterSpec(r"host\.sectors_(read|written)", "counter", "512-byte sectors", "sectors the rig device moved"),
    CounterSpec(r"host\.bytes_(read|written)", "counter", "bytes", "bytes the rig device moved"),
    CounterSpec(r"host\.io_ms", "counter", "ms", "time the rig device had I/O in flight"),
    CounterSpec(r"host\.(rmw_rows|full_stripe_rows)", "counter", "stripe rows",
                "RAID5 rows written by read-modify-write / by full-stripe write"),
    CounterSpec(r"host\.(promotions|demotions|tier_cycles)", "counter", "events", "tiered pool migrations"),
    CounterSpec(r"host\.migrated_bytes", "counter", "bytes", "bytes a tiered pool migrated"),
    CounterSpec(r"host\.(ssd|hdd|split)_(reads|writes)|host\.unmapped_reads", "counter", "requests",
                "a tiered pool's host requests served wholly by SSD / wholly by HDD extents / by both; reads of "
                "never-written extents (zeros, no media access)"),
    CounterSpec(r"host\.(ssd|hdd)_bytes_(read|written)|host\.unmapped_bytes_read", "counter", "bytes",
                "a tiered pool's host bytes by the tier that served them (unmapped: zeros)"),
    CounterSpec(r"host\.heat_(ios|ignored_ios)", "counter", "requests",
                "a tiered pool's host requests counted as extent heat / too large to count (Easy Tier: > 64 KiB)"),
    CounterSpec(r"host\.cache_(read_hits|write_backs|full_stalls|destages)", "counter", "requests",
                "an array controller's write cache: reads served from it / writes acknowledged from it / writes that "
                "waited for room / destage writes to the array"),
    CounterSpec(r"host\.cache_destaged_bytes", "counter", "bytes", "bytes an array controller's cache destaged"),
    CounterSpec(r"host\.latency_s_sum", "counter", "s",
                "summed time of the array's host commands from arrival to completion (Δ/Δt: the mean number "
                "outstanding in the array, Little's law)"),
    CounterSpec(r"host\.member_(reads|writes)", "counter", "requests", "requests summed over an array's members"),
    CounterSpec(r"host\.member\d+\.(reads|writes|cache_hits)", "counter", "requests",
                "one member drive's requests"),
    CounterSpec(r"host\.member\d+\.bytes_(read|written)", "counter", "bytes", "one member drive's bytes"),
    CounterSpec(r"host\.member\d+\.busy_s", "counter", "s", "time one member drive was busy"),
    # emulator: the spindle emulator's timing
    CounterSpec(r"emulator\.(released|idle_arrivals|self_timed)", "counter", "requests",
                "requests the emulator released / that found it idle / it timed itself"),
    CounterSpec(r"emulator\.spin_denied", "counter", "requests",
                "replies that slept to their time because another request thread was spinning"),
    CounterSpec(r"emulator\.spin_s_sum", "counter", "s", "time the emulator's request threads spent spinning"),
    CounterSpec(r"emulator\.(release_late_s_sum|idle_gap_s_sum)", "counter", "s",
                "summed lateness of releases against the schedule / summed idle gaps"),
    CounterSpec(r"emulator\.flushes_released", "counter", "requests", "flushes the emulator released (in released)"),
    CounterSpec(r"emulator\.flush_late_s_sum", "counter", "s",
                "summed lateness of the flushes' releases (in release_late_s_sum)"),
    CounterSpec(r"emulator\.(boundary_s_sum|model_s_sum)", "counter", "s",
                "the compiled emulator's replies: summed real time from the plugin callback's entry to its return / "
                "summed model time from submission to completion (their ratio: accuracy at the plugin boundary)"),
    # machine: this machine's CPUs over the fio run (/proc/stat; snaptax.host.procs.cpu_times)
    CounterSpec(r"machine\.cpu_(busy|idle|steal)_s", "counter", "s",
                "this machine's CPU time busy (user, nice, system, irq, softirq) / idle (idle, iowait) / taken by "
                "the hypervisor (steal), summed over its CPUs: the emulated spindles keep time only with the CPU"),
    # engine: snapshot engine internals
    CounterSpec(r"engine\.snapshot_allocated_bytes", "gauge", "bytes", "space all snapshots of the volume take"),
    CounterSpec(r"engine\.(pages_copied|cow_faults|cow_requests|metadata_ops|bitmap_marks|snap_pages_read|"
                r"recovery_punched_pages|snapshots_created|snapshots_deleted|syncs)", "counter", "events",
                "copy-on-first-write engine operations"),
    CounterSpec(r"engine\.bytes_copied", "counter", "bytes", "bytes copied into snapshots"),
    CounterSpec(r"engine\.(source_write|copy_read|copy_write|commit)_s", "counter", "thread-seconds",
                "copy-on-first-write engine time in source writes / reading old pages / writing them into the "
                "snapshots / making the copies durable (summed over request threads)"),
    CounterSpec(r"engine\.push_wait_s", "counter", "thread-seconds",
                "copy-on-first-write engine time requests waited for a pusher (pushers > 0: copies made so many at "
                "a time; summed over request threads)"),
    CounterSpec(r"engine\.push_peak", "gauge", "requests",
                "the most requests of the copy-on-first-write engine that held a pusher at once since the volume "
                "opened (at most pushers)"),
    CounterSpec(r"engine\.statement_s", "counter", "seconds",
                "copy-on-first-write engine time in the statement's own work, done holding the pusher before each "
                "write's copies (statement_ns > 0; one pusher: wall time)"),
    CounterSpec(r"engine\.snap\d+\.(copy_write|commit)_s", "counter", "thread-seconds",
                "the same, for one snapshot (snap1 the oldest name)"),
    CounterSpec(r"engine\.(pool_data_percent|pool_metadata_percent)", "gauge", "%", "thin pool usage"),
    CounterSpec(r"engine\.(pool_data_total_chunks|pool_data_used_chunks)", "gauge", "chunks",
                "thin pool data chunks (total, used)"),
    CounterSpec(r"engine\.chunks_broken", "counter", "chunks",
                "thin chunks provisioned anew since the snapshot (shared chunks broken by first writes)"),
    CounterSpec(r"engine\.(pool_meta_total_blocks|pool_meta_used_blocks)", "gauge", "blocks",
                "thin pool metadata blocks"),
    CounterSpec(r"engine\.pool_transaction_id", "gauge", "", "thin pool metadata transaction id"),
    CounterSpec(r"engine\.live_mapped_sectors", "gauge", "512-byte sectors", "sectors mapped in the live LV"),
    # guest: inside a TCG guest
    CounterSpec(r"guest\.(reads|writes)", "counter", "requests", "requests the guest's LV completed"),
    CounterSpec(r"guest\.sectors_(read|written)", "counter", "512-byte sectors", "sectors the guest's LV moved"),
    CounterSpec(r"guest\.io_ms", "counter", "ms", "time the guest's LV had I/O in flight"),
    CounterSpec(r"guest\.cpu_(busy|idle)_s", "counter", "s",
                "the guest's CPU time busy (user, nice, system, irq, softirq) / idle (idle, iowait), summed over "
                "its CPUs; steal is in neither (snaptax.host.procs.cpu_times)"),
)
# snapdev: a second rig device an engine keeps its snapshots on (the cofw engine's snapshot_device), counted as
# the host counts the source device.
CATALOGUE += tuple(CounterSpec(s.pattern.replace(r"host\.", r"snapdev\."), s.kind, s.unit, s.doc + " (snapshot device)")
                   for s in CATALOGUE if s.pattern.startswith(r"host\."))
_COMPILED = tuple((re.compile(s.pattern), s) for s in CATALOGUE)


class UnknownCounter(ValueError):
    """A counter name that is not in the catalogue (a programming error: add it to CATALOGUE)."""


def spec(name: str) -> CounterSpec:
    for rx, s in _COMPILED:
        if rx.fullmatch(name):
            return s
    raise UnknownCounter(f"counter {name!r} is not in snaptax.counters.CATALOGUE")


def kind(name: str) -> Kind:
    return spec(name).kind


@dataclass(frozen=True)
class CounterValue:
    """One counter over one measurement. delta is after − before for a counter, None for a gauge."""

    name: str
    kind: Kind
    unit: str
    before: float
    after: float

    @property
    def delta(self) -> float | None:
        return self.after - self.before if self.kind == "counter" else None

    def to_json(self) -> dict:
        return {"kind": self.kind, "unit": self.unit, "before": self.before, "after": self.after,
                "delta": self.delta}


def over_measurement(before: dict[str, float], after: dict[str, float]) -> dict[str, CounterValue]:
    """Pair readings taken before and after a measurement; every name must be in the catalogue."""
    out: dict[str, CounterValue] = {}
    for name in sorted(set(before) | set(after)):
        s = spec(name)
        b = float(before.get(name, 0.0))
        a = float(after.get(name, b))
        out[name] = CounterValue(name, s.kind, s.unit, b, a)
    return out
