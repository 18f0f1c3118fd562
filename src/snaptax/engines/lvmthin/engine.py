"""The LVM thin engine: a thin pool, a thin volume and thin snapshots (array-style block sharing).

Where it runs:
  * natively, on a host whose kernel has device-mapper (a real rig; guarded like every real device);
  * otherwise in a TCG guest (snaptax.guest): this machine's kernel has no device-mapper. The rig device is
    served over NBD by qemu-storage-daemon and becomes the guest's physical volume (virtio disk "pv0").

Either way the whole Plan is compiled into one POSIX sh script (lvm, dmsetup, fio, busybox) that is executed in
one go, and its results (fio JSON, job files, logs, counters) come back as files. The script is not driven step by
step: timing a plan in one piece keeps host round trips out of the measurement. Its one control channel is for
gated steps (plan.Measure.gate): before each it asks the host on its output and reads "run" or "skip" on its input
(the guest's serial console, natively a pipe; guest.vm.GateAnswers). That channel carries only these questions and
answers (and the step lines the host stamps), never result data.

Semantics of the plan's steps:
  chain="fan"   every snapshot is of the origin; fio runs against the origin (the live volume).
  chain="stack" a snapshot-of-snapshot chain: each TakeSnapshot snapshots the live volume and the new snapshot
                becomes the live volume, so fio always writes the newest layer (like a redo-log chain).
  DeleteSnapshot removes the newest/oldest frozen volume (`lvremove`); thin volumes share chunks by reference
  counting, so a delete never copies data and never changes the other volumes' contents.

Counters (per Measure, before/after; names in snaptax.counters.CATALOGUE):
  host.*    the PVs' /sys/block/*/stat as seen by the I/O issuer (the guest, or the host natively), summed: what
            the rig device received (the PV is a region of it, served 1:1). Under TCG the emulation's own overhead
            hides the snapshot cost on a fast backend; these do not.
  guest.*   the live thin device's stat (reads, writes, sectors, io_ms): what fio's volume completed.
  engine.pool_*  the pool's `dmsetup status` (data and metadata blocks, transaction id) and the usage
            percentages lvs would print, computed from them (gauges).
  engine.live_mapped_sectors   sectors mapped in the live volume (gauge).
  engine.chunks_broken   (counter, kept by the engine across the plan) shared chunks whose sharing a write broke:
            a write to a shared chunk allocates a pool chunk while the live mapping stays the same size, a write to
            an unprovisioned chunk grows pool and mapping alike (chunks_broken()).
  engine.snapshot_allocated_bytes   (gauge) the pool data chunks the live volume does not map — those only
            snapshots hold — times the chunk size: the space the snapshots take.
The chunk size is a constant, in describe().
"""
from __future__ import annotations

import re
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ... import fio, paths
from ...errors import ConfigError, EngineError, MeasurementError
from ...fio import FioRun, FioTarget
from ...guest.vm import (
    GATE_ASK,
    GATE_GO,
    GATE_NAME,
    GATE_TOLD,
    STEP_MARK,
    ConsoleLines,
    GateAnswers,
    GuestConfig,
    GuestDisk,
    GuestStalled,
    pipe_writer,
    run_guest,
)
from ...host.procs import ProcessGroup, cpu_times, popen_owned, signals_deferred, stop_group
from ...host.rig import Device, Rig
from ...lock import measurement_lock
from ...plan import Clone, DeleteSnapshot, Gate, Measure, Plan, TakeSnapshot, require_gate
from ..base import SnapshotEngine

VG = "snaptax"
POOL = "pool"
ORIGIN = "origin"
CONTROL = "control"
MiB = 1 << 20
_EXTENT = 4 * MiB  # VG extent size (lvm's default); pool and PV sizes are rounded to it


def host_has_device_mapper(proc_devices: Path = Path("/proc/devices")) -> bool:
    """True if the running kernel has device-mapper (so dm-thin can be loaded natively)."""
    try:
        return any(line.split()[-1:] == ["device-mapper"] for line in proc_devices.read_text().splitlines())
    except OSError:
        return False


@dataclass(frozen=True)
class LvmThinConfig:
    """One thin-pool configuration.

    chunk_size: pool chunk (allocation and sharing unit), 64 KiB … 1 GiB, a multiple of 64 KiB.
    zeroing: zero a newly provisioned chunk before a partial write to it (`lvcreate -Z y`); sharing breaks copy
             the old chunk regardless.
    pool_factor: pool data size ÷ thin volume size, at least 2: a full copy-out of the origin after a snapshot
             must fit, or the pool fills and I/O stalls (platform notes).
    chain: 'fan' (snapshots of the origin, fio on the origin) or 'stack' (snapshot-of-snapshot, fio on the newest).
    mode: 'auto' (native if the host has device-mapper, else the TCG guest), 'guest' or 'native'.
    integrity: keep a byte copy of every volume (guest RAM); after every step compare each volume with it by MD5,
             after deletes and at the end byte for byte (cmp).
    control_volume: also create a flat (linear, never snapshotted) LV "control" of the thin volume's size beside the
             pool, on the same PV, for the plan's Measure(target="flat"): the same job on the guest's raw disk,
             so the guest's own overhead is measured beside the thin volume's.
    """

    name: str = "lvmthin"
    chunk_size: int = 64 << 10
    zeroing: bool = False
    pool_factor: float = 2.0
    metadata_size: int | None = None
    chain: Literal["fan", "stack"] = "fan"
    mode: Literal["auto", "guest", "native"] = "auto"
    integrity: bool = False
    control_volume: bool = False
    guest: GuestConfig = field(default_factory=GuestConfig)
    analogue: str = ""

    def __post_init__(self) -> None:
        src = f"lvmthin config {self.name!r}"
        cs = self.chunk_size
        if cs < (64 << 10) or cs > (1 << 30) or cs % (64 << 10):
            raise ConfigError(src, "chunk_size", f"{cs} is not a multiple of 64 KiB in 64 KiB…1 GiB")
        if self.pool_factor < 2:
            raise ConfigError(src, "pool_factor", f"{self.pool_factor} < 2: a full copy-out would fill the pool")
        if self.chain not in ("fan", "stack"):
            raise ConfigError(src, "chain", f"{self.chain!r} is not 'fan' or 'stack'")
        if self.mode not in ("auto", "guest", "native"):
            raise ConfigError(src, "mode", f"{self.mode!r} is not 'auto', 'guest' or 'native'")
        if self.metadata_size is not None and not (2 * MiB <= self.metadata_size <= 16 << 30):
            raise ConfigError(src, "metadata_size", "must lie in 2 MiB…16 GiB")


# ---------------------------------------------------------------- plan -> script

@dataclass
class _State:
    live: str = ORIGIN
    frozen: list[str] = field(default_factory=list)  # snapshots (point-in-time volumes), oldest first
    serial: int = 0

    @property
    def volumes(self) -> list[str]:
        return [*self.frozen, self.live]


@dataclass(frozen=True)
class CompiledPlan:
    script: str
    files: dict[str, bytes]
    measures: dict[int, tuple[Measure, int, str]]   # plan index -> (step, chain length, volume measured)
    events: list[dict]                               # snapshot/delete steps, as the script will perform them
    final_chain_length: int = 0


_SCRIPT_HEAD = r'''# generated by snaptax.engines.lvmthin from a Plan; runs under sh -e (guest /init or natively)
. "${SNAPTAX_LIB:-/etc/snaptax/lib.sh}"
VG=%(vg)s
PVS="%(pvs)s"
dev() { echo "/dev/mapper/$VG-$1"; }
now() { cut -d' ' -f1 /proc/uptime; }
blkname() {  # the dm-N of volume $1, by shell builtins (no dmsetup exec: counters run twice per measurement)
    for b in /sys/block/dm-*; do
        read -r n < "$b/dm/name"
        if [ "$n" = "$VG-$1" ]; then echo "${b##*/}"; return 0; fi
    done
    return 1
}
counters() {  # counters MEASURED LIVE FILE: every counter the host turns into numbers
    {
        for s in %(serials)s; do echo "pv $(blkstat $s)"; done
        read -r stat < "/sys/block/$(blkname $1)/stat"
        echo "lv $1 $stat"
        echo "pool $(dmsetup status $VG-%(pool)s-tpool)"
        echo "thin $2 $(dmsetup status $VG-$2)"
        read -r cpu < /proc/stat
        echo "$cpu"
    } > "$3"
}
step() { echo "$1 $(now)" >> "$OUT/steps.txt"; echo "%(step)s$1"; }  # the line: the host's sign of life
gate() {  # gate TAG NAME: does gated step TAG run? (snaptax.plan.Measure.gate) The host answers on standard input
    # (the guest's serial console; natively a pipe) with a line "snaptax-go TAG run|skip"; any other line is ignored
    # (an answer for another step, the console's echo, a line the serial line garbled) and the next one read. After
    # a skip, later steps of gate NAME skip without asking.
    eval "[ -z \"\${gate_closed_$2:-}\" ]" || return 1
    step "$1-%(ask)s $2"
    while read -r word tag answer; do
        [ "$word" = %(go)s ] && [ "$tag" = "$1" ] || continue
        case "$answer" in
            run) step "$1-%(told)s run"; return 0 ;;
            skip) step "$1-%(told)s skip"; eval "gate_closed_$2=1"; return 1 ;;
        esac
    done
    echo "gate $2: the host's answer for step $1 never came (input closed)" >&2
    exit 4
}
REF=/tmp/snaptax-refs
ref() {  # ref VOLUME: (re)take VOLUME's reference copy and its checksum
    cat "$(dev $1)" > "$REF/$1"; md5sum < "$REF/$1" | cut -c1-32 > "$REF/$1.md5"
}
check() {  # check md5|bytes STEP VOLUME...: every volume equal to its reference copy
    how=$1; at=$2; shift 2
    sync; echo 3 > /proc/sys/vm/drop_caches
    for v in "$@"; do
        want=$(cat "$REF/$v.md5")
        if [ "$how" = bytes ]; then
            # busybox cmp reads byte by byte (seconds per 32 MiB under TCG): kept for deletes and the end.
            cmp -s "$(dev $v)" "$REF/$v" && got=$want || got=differs
        else
            got=$(md5sum < "$(dev $v)" | cut -c1-32)
        fi
        if [ "$got" = "$want" ]; then
            echo "ok $at $v $how $want" >> "$OUT/integrity.txt"
        else
            echo "MISMATCH $at $v $how $want" >> "$OUT/integrity.txt"
            echo "integrity: volume $v differs from its point-in-time copy after step $at ($how)" >&2
            exit 3
        fi
    done
}
'''


_GATE_RE = re.compile(GATE_NAME)
# The gate protocol's words (guest.vm), filled into the script head with its other parameters.
PROTOCOL = {"step": STEP_MARK, "ask": GATE_ASK, "told": GATE_TOLD, "go": GATE_GO}


def compile_plan(plan: Plan, config: LvmThinConfig, disk_size: int, pv_serials: list[str]) -> CompiledPlan:
    """The plan as one sh script plus the job files it reads (paths relative to $IN)."""
    list(plan.measurements())  # validates: no delete from an empty chain
    pvs_expr = " ".join(f"$(disk {s})" for s in pv_serials)
    lines = [_SCRIPT_HEAD % {"vg": VG, "pvs": pvs_expr, "serials": " ".join(pv_serials), "pool": POOL, **PROTOCOL}]
    pool_size = _round_up(int(disk_size * config.pool_factor), _EXTENT)
    meta = (f" --poolmetadatasize {config.metadata_size // 1024}k" if config.metadata_size else "")
    lines += [
        'step "setup-begin"',
        # Stale LVM labels on a reused device would make pvcreate ask questions; wipe the label area.
        'for p in $PVS; do dd if=/dev/zero of="$p" bs=1M count=4 conv=fsync 2>/dev/null; done',
        'lvm pvcreate -q -ff -y $PVS',
        f'lvm vgcreate -q -s {_EXTENT // 1024}k $VG $PVS',
        # errorwhenfull: a full pool fails the I/O (fio reports it) instead of queueing it forever.
        f'lvm lvcreate -q --type thin-pool -L {pool_size // 1024}k -c {config.chunk_size // 1024}k '
        f'-Z {"y" if config.zeroing else "n"}{meta} -n {POOL} $VG',
        f'lvm lvchange -q --errorwhenfull y $VG/{POOL}',
        f'lvm lvcreate -q -V {disk_size // 1024}k -T $VG/{POOL} -n {ORIGIN}',
    ]
    if config.control_volume:
        # Linear: the guest's raw disk (a region of the PV, mapped 1:1), never snapshotted.
        lines.append(f'lvm lvcreate -q -Wn -y -L {disk_size // 1024}k -n {CONTROL} $VG')
    lines += [
        'step "setup-end"',
        'lvm lvs -a -o lv_name,lv_size,data_percent,metadata_percent,chunk_size,zero $VG',
    ]
    if config.integrity:
        # A thin volume reads zeros where nothing is provisioned: the origin's first reference is all zeros.
        lines += ['mkdir -p $REF', f'truncate -s {disk_size} $REF/{ORIGIN}',
                  f'md5sum < $REF/{ORIGIN} | cut -c1-32 > $REF/{ORIGIN}.md5', f'check bytes setup {ORIGIN}']
    st = _State()
    files: dict[str, bytes] = {}
    measures: dict[int, tuple[Measure, int, str]] = {}
    events: list[dict] = []
    for index, step in enumerate(plan.steps):
        tag, last = f"{index:03d}", index == len(plan.steps) - 1
        if isinstance(step, TakeSnapshot):
            st.serial += 1
            name, source = f"snap{st.serial}", (ORIGIN if config.chain == "fan" else st.live)
            # -kn: thin snapshots carry the activation-skip flag by default; create this one active.
            lines += [f'step "{tag}-snapshot-begin {name} {source}"',
                      f'lvm lvcreate -q -s -kn -n {name} $VG/{source}',
                      f'step "{tag}-snapshot-end {name} {source}"']
            if config.integrity:
                lines.append(f'cp $REF/{source} $REF/{name} && cp $REF/{source}.md5 $REF/{name}.md5')
            if config.chain == "fan":
                st.frozen.append(name)
            else:
                st.frozen.append(st.live)
                st.live = name
            events.append({"index": index, "event": "snapshot", "name": name, "source": source,
                           "chain_length": len(st.frozen)})
        elif isinstance(step, DeleteSnapshot):
            if step.which not in ("newest", "oldest"):
                raise ConfigError("plan", f"steps[{index}].which", f"{step.which!r} is not 'newest' or 'oldest'")
            name = st.frozen.pop(-1 if step.which == "newest" else 0)
            lines += [f'step "{tag}-delete-begin {name} {step.which}"',
                      f'lvm lvremove -q -f $VG/{name}',
                      f'step "{tag}-delete-end {name} {step.which}"']
            if config.integrity:
                lines.append(f'rm -f $REF/{name} $REF/{name}.md5')
            events.append({"index": index, "event": "delete", "name": name, "which": step.which,
                           "chain_length": len(st.frozen)})
        elif isinstance(step, Measure):
            if step.target == "flat" and not config.control_volume:
                raise ConfigError("plan", f"steps[{index}].target",
                                  f"lvmthin config {config.name!r} has no control volume (control_volume)")
            volume = CONTROL if step.target == "flat" else st.live
            if step.job.offset + step.job.size > disk_size:
                raise ConfigError("plan", f"steps[{index}].job.size",
                                  f"offset+size {step.job.offset + step.job.size} exceeds the thin volume "
                                  f"({disk_size} bytes)")
            target = FioTarget("libaio", filename=f"/dev/mapper/{VG}-{volume}")
            files[f"m{tag}/{fio.JOB_FILE}"] = step.job.job_file(target, log_prefix="fio").encode()
            d = f"$OUT/m{tag}"
            body = [f'mkdir -p {d} && cp $IN/m{tag}/{fio.JOB_FILE} {d}/',
                    f'counters {volume} {st.live} {d}/counters_before.txt',
                    f'step "{tag}-fio-begin {volume}"',
                    f'(cd {d} && fio --output-format=json --output={fio.JSON_FILE} {fio.JOB_FILE})',
                    f'step "{tag}-fio-end {volume}"',
                    f'counters {volume} {st.live} {d}/counters_after.txt']
            if config.integrity and volume == st.live:
                body.append(f'ref {st.live}')
            if step.gate is None:
                lines += body
            elif not _GATE_RE.fullmatch(step.gate):
                raise ConfigError("plan", f"steps[{index}].gate", f"{step.gate!r}: want [a-z][a-z0-9_]* (a shell name)")
            else:
                if config.integrity and not last:
                    # A skipped step changed nothing to check; the plan's last check (bytes) runs in any case.
                    body.append(f'check md5 {tag} {" ".join(st.volumes)}')
                lines += [f'if gate {tag} {step.gate}; then', *(f"    {line}" for line in body), "fi"]
            measures[index] = (step, len(st.frozen), volume)
        elif isinstance(step, Clone):
            raise ConfigError("plan", f"steps[{index}]", "the LVM thin guest does not clone volumes")
        else:  # pragma: no cover - Step is a closed union
            raise TypeError(f"unknown plan step {step!r}")
        if config.integrity and (last or not (isinstance(step, Measure) and step.gate is not None)):
            # Checksums after every step that ran; byte for byte after a delete and at the end of the plan.
            how = "bytes" if isinstance(step, DeleteSnapshot) or last else "md5"
            lines.append(f'check {how} {tag} {" ".join(st.volumes)}')
    lines += ['lvm lvs -a -o lv_name,lv_size,data_percent,metadata_percent $VG',
              'lvm vgchange -q -an $VG', 'step "done"']
    return CompiledPlan(script="\n".join(lines) + "\n", files=files, measures=measures, events=events,
                        final_chain_length=len(st.frozen))


def gate_decider(plan: Plan, gate: Gate) -> Callable[[str, str], bool | None]:
    """The host's decide(TAG, NAME) for GateAnswers: `gate`'s answer for the gated Measure the script's step TAG
    compiled from (asked with its repeat), or None (not answered) when TAG and NAME name no gated Measure of `plan`
    as compiled: a question the console garbled, not one to answer with some other step's repeat."""
    questions = {f"{index:03d}": step for index, step in enumerate(plan.steps)
                 if isinstance(step, Measure) and step.gate is not None}

    def decide(tag: str, name: str) -> bool | None:
        step = questions.get(tag)
        if step is None or step.gate != name:
            return None
        return gate(name, step.repeat)
    return decide


@dataclass(frozen=True)
class ScriptRun:
    """A compiled plan's script run natively (run_script)."""

    rc: int                          # its exit status
    t0: float                        # host monotonic s at its start
    step_times: dict[str, float]     # {TAG: host monotonic s} of its `snaptax-step TAG` lines, as a guest run's


def run_script(in_dir: Path, env: dict[str, str], log_path: Path, timeout_s: float,
               decide: Callable[[str, str], bool | None] | None = None) -> ScriptRun:
    """Run a compiled plan's run.sh natively (`sh -e`, in `in_dir`), its output into `log_path`; `decide` answers
    its gate questions over a pipe to its standard input, as the guest's console does (GateAnswers). Returns its
    exit status and the host's stamps of its step lines (ConsoleLines, as for the guest's console); raises
    EngineError past `timeout_s`. The script is gone when this returns."""
    import subprocess

    reader = ConsoleLines(log_path)
    with open(log_path, "wb") as log:
        t0 = time.monotonic()
        # Its own process group: on a timeout, an error or Ctrl-C here the script and whatever it started (fio,
        # lvm) are stopped together (procs.stop_group), not left to finish alone.
        proc = popen_owned(["sh", "-e", "run.sh"], cwd=in_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                           stdin=subprocess.PIPE if decide else subprocess.DEVNULL)
        try:
            answers = GateAnswers(decide, pipe_writer(proc)) if decide else None
            deadline = time.monotonic() + timeout_s
            while proc.poll() is None:
                new = reader.poll()
                if answers is not None:
                    answers.see(new)
                    answers.resend()
                if time.monotonic() > deadline:
                    raise EngineError(f"lvmthin native script still running after {timeout_s:.0f} s")
                time.sleep(0.05)
        finally:
            with signals_deferred():     # a second Ctrl-C does not cut the stop short (as ProcessGroup.close)
                stop_group(proc, grace=5.0)
    reader.poll()                        # the lines of its last poll interval
    return ScriptRun(proc.returncode, t0, reader.step_times())


def _round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


# ---------------------------------------------------------------- counters

_STAT = ("reads", "reads_merged", "sectors_read", "read_ms", "writes", "writes_merged", "sectors_written",
         "write_ms", "in_flight", "io_ms", "weighted_io_ms")
USER_HZ = 100     # /proc/stat's tick (Linux's USER_HZ on x86)
_KEEP = ("reads", "writes", "sectors_read", "sectors_written", "io_ms")


def parse_counters(text: str, chunk_size: int) -> dict[str, float]:
    """The lines written by the script's `counters` function -> counters named as in snaptax.counters."""
    out: dict[str, float] = {f"host.{k}": 0.0 for k in _KEEP}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        kind = parts[0]
        if kind == "pv":  # pv SERIAL f1 ... f17: summed over PVs, as "what the device received"
            for k, v in zip(_STAT, parts[2:], strict=False):   # newer kernels append fields
                if k in _KEEP:
                    out[f"host.{k}"] += float(v)
        elif kind == "lv":
            for k, v in zip(_STAT, parts[2:], strict=False):
                if k in _KEEP:
                    out[f"guest.{k}"] = float(v)
        elif kind == "pool":
            # pool NAME: 0 LEN thin-pool TID USED_META/TOTAL_META USED_DATA/TOTAL_DATA ...
            f = parts[1:]
            if "thin-pool" not in f:
                raise MeasurementError(f"unexpected thin-pool status: {line}")
            i = f.index("thin-pool")
            meta_used, meta_total = f[i + 2].split("/")
            data_used, data_total = f[i + 3].split("/")
            # The pool's usage in per cent, as lvs prints it, from the same status line: counters run before and
            # after every measurement, and lvs (the lvm binary scanning its devices) cost ~0.5 s each under TCG.
            out.update({"engine.pool_data_percent": 100.0 * float(data_used) / float(data_total),
                        "engine.pool_metadata_percent": 100.0 * float(meta_used) / float(meta_total)})
            out.update({"engine.pool_transaction_id": float(f[i + 1]),
                        "engine.pool_meta_used_blocks": float(meta_used),
                        "engine.pool_meta_total_blocks": float(meta_total),
                        "engine.pool_data_used_chunks": float(data_used),
                        "engine.pool_data_total_chunks": float(data_total)})
        elif kind == "cpu":  # /proc/stat's first line (ticks of USER_HZ)
            t = cpu_times(line, USER_HZ)
            out["guest.cpu_busy_s"], out["guest.cpu_idle_s"] = t.busy_s, t.idle_s
        elif kind == "thin":  # thin LV NAME: 0 LEN thin MAPPED_SECTORS HIGHEST|-
            f = parts[2:]
            i = f.index("thin")
            out["engine.live_mapped_sectors"] = float(f[i + 1])
    if "engine.pool_data_used_chunks" in out and "engine.live_mapped_sectors" in out:
        out["engine.snapshot_allocated_bytes"] = _held_chunks(out, chunk_size) * chunk_size
    return out


def _held_chunks(c: dict[str, float], chunk_size: int) -> float:
    """Pool data chunks the live volume does not map: in a fan of snapshots of the live volume (or a stack whose
    newest layer is live) the chunks only snapshots hold."""
    return c["engine.pool_data_used_chunks"] - c["engine.live_mapped_sectors"] / (chunk_size // 512)


def chunks_broken(before: dict[str, float], after: dict[str, float], chunk_size: int) -> tuple[float, float]:
    """(chunks whose sharing was broken, chunks newly provisioned) during one Measure of the live volume.

    A write to an unmapped chunk grows both the pool and the live volume's mapping; a write to a shared chunk
    allocates a pool chunk while the live mapping stays the same size (the chunk is remapped, not added).
    """
    new = (after["engine.live_mapped_sectors"] - before["engine.live_mapped_sectors"]) / (chunk_size // 512)
    return _held_chunks(after, chunk_size) - _held_chunks(before, chunk_size), new


# ---------------------------------------------------------------- engine

class LvmThinEngine(SnapshotEngine):
    """A thin volume of `disk_size` bytes in a thin pool on one rig device; runs whole plans (execute)."""

    kind = "lvmthin"

    def __init__(self, rig: Rig, device: Device, config: LvmThinConfig, disk_size: int):
        if disk_size % MiB:
            raise ConfigError(rig.source, "disk_size", f"{disk_size} is not a multiple of 1 MiB")
        self.pv_size = _round_up(int(disk_size * config.pool_factor) + 2 * _metadata_guess(disk_size, config)
                                 + (disk_size if config.control_volume else 0) + 64 * MiB, _EXTENT)
        if self.pv_size > device.capacity:
            raise ConfigError(rig.source, f"devices.{device.name}.capacity",
                              f"smaller than the thin pool's physical volume ({self.pv_size} bytes for a "
                              f"{disk_size}-byte volume at pool_factor {config.pool_factor})")
        self.rig, self.device, self.config, self.disk_size = rig, device, config, disk_size
        self.group = ProcessGroup()
        self.native = self._choose_native()
        self._chain = 0
        self._shares_broken = 0.0
        self.last_run: dict[str, Any] = {}
        # {TAG: host monotonic s} of the script's `snaptax-step TAG` lines in the last run (the guest's console, or
        # natively its output): where each step falls among host-side samples (per-tier counters of an emulated
        # pool), with no guest-clock mapping.
        self.host_step_times: dict[str, float] = {}

    def _choose_native(self) -> bool:
        has_dm = host_has_device_mapper()
        if self.config.mode == "native" and not has_dm:
            raise EngineError("lvmthin mode 'native': this kernel has no device-mapper (/proc/devices); "
                              "use mode 'guest' or 'auto'")
        return self.config.mode == "native" or (self.config.mode == "auto" and has_dm)

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> LvmThinEngine:
        from ...host.backends import open_device
        from ...host.qsd import RegionStore, StorageDaemon
        try:
            tag = f"lvmthin-{self.config.name}"
            self.run_dir = paths.engine_run_dir(self.rig.rig_work_dir, tag)
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.group.own(self.run_dir)
            backend = open_device(self.rig, self.device, self.group, tag=tag)
            self._host_counters = backend.host_counters
            self._backend = backend
            if not self.native:
                # Built (or found in the machine-wide cache) before any measurement starts; shared by all rigs,
                # since the image does not depend on the rig.
                from ...guest.image import build_image
                self.image = build_image()
                # The PV is a region of the rig device, exported over NBD to the guest's virtio disk "pv0".
                self.daemon = StorageDaemon(self.group, self.run_dir / "qsd").start()
                store = RegionStore(self.daemon, backend.protocol(), self.device.capacity)
                region = store.allocate(self.pv_size, "pv0")
                self.disks = [GuestDisk("pv0", self.daemon.export(region.node, "pv0"))]
        except BaseException:
            self.group.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        daemon = getattr(self, "daemon", None)
        if daemon is not None and daemon.qmp:
            daemon.qmp.close()
        self.group.close()

    # ------------------------------------------------------------ interface
    @property
    def chain_length(self) -> int:
        return self._chain

    def fio_target(self) -> FioTarget:
        raise EngineError("lvmthin runs fio next to dm-thin (in the guest or on the host); use execute(plan)")

    def take_snapshot(self) -> str:
        raise EngineError("lvmthin executes whole plans (execute); single steps are not driven from the host")

    def delete_snapshot(self, which: str = "newest") -> str:
        raise EngineError("lvmthin executes whole plans (execute); single steps are not driven from the host")

    def counters(self) -> dict[str, float]:
        """Host-level counters of the rig device (below the guest and qemu-storage-daemon)."""
        return self._host_counters()

    def describe(self) -> dict[str, Any]:
        d = {"engine": self.kind, "config": asdict(self.config), "disk_size": self.disk_size,
             "pv_size": self.pv_size, "device": self.device.name,
             "where": "native" if self.native else "tcg-guest"}
        image = getattr(self, "image", None)
        if image is not None:
            d["guest_image"] = {k: image.provenance[k] for k in
                                ("key", "kernel_package", "kernel_version", "kernel_release", "kernel_deb_sha256",
                                 "tool_versions", "initrd_bytes")}
        return d

    # ------------------------------------------------------------ execution
    def run_plan(self, plan: Plan, out_dir: Path, gate: Gate | None = None) -> tuple[CompiledPlan, Path]:
        """Compile and run `plan`; its raw results land in out_dir (m<index>/..., steps.txt, script.log). `gate`
        answers the script's questions about gated steps while it runs (guest.vm.GateAnswers)."""
        require_gate(plan, gate)
        serials = ["pv0"]
        compiled = compile_plan(plan, self.config, self.disk_size, serials)
        if self.config.integrity:
            volumes = plan.max_chain_length + 1
            if not self.native and volumes * self.disk_size * 2 > self.config.guest.memory_mib * MiB:
                raise ConfigError("lvmthin", "integrity", f"{volumes} reference copies of {self.disk_size} bytes "
                                  f"do not fit in half the guest's {self.config.guest.memory_mib} MiB")
        timeout = max(self.config.guest.run_timeout_s, plan.fio_seconds() * 3 + 600)
        stall = stall_limit(plan, self.disk_size)
        decide = gate_decider(plan, gate) if gate is not None else None
        with measurement_lock():
            host_before = self._host_counters()
            t0 = time.monotonic()
            if self.native:
                native = self._run_native(compiled, out_dir, timeout, decide)
                self.host_step_times = native.step_times
                (out_dir / "host_steps.txt").write_text(
                    "".join(f"{tag} {t - native.t0:.3f}\n" for tag, t in native.step_times.items()))
            else:
                image = self.image
                gcfg = _replace(self.config.guest, run_timeout_s=timeout, stall_timeout_s=stall)
                run = run_guest(image, self.disks, compiled.script, out_dir, files=compiled.files, config=gcfg,
                                run_dir=self.run_dir / "guest", pg=self.group, gate=decide)
                self.last_run = {"guest_image_key": image.key, "boot_to_ready_s": run.boot_to_ready_s,
                                 "guest_wall_s": run.wall_s}
                self.host_step_times = run.step_times
                (out_dir / "host_steps.txt").write_text(
                    "".join(f"{tag} {t - run.t0:.3f}\n" for tag, t in run.step_times.items()))
            wall = time.monotonic() - t0
            host_after = self._host_counters()
        self.last_run.update(wall_s=wall, host_counters_before=host_before, host_counters_after=host_after)
        return compiled, out_dir

    def _run_native(self, compiled: CompiledPlan, out_dir: Path, timeout: float,
                    decide: Callable[[str, str], bool | None] | None) -> ScriptRun:
        """The same script on the host: lvm reads our lvm.conf (filter: only the rig device) via LVM_SYSTEM_DIR."""
        import subprocess

        from ...host.procs import run
        pv = self._backend.path
        if pv is None:
            raise EngineError("lvmthin native mode needs a block device (a file rig device's loop or a real disk)")
        sysdir = self.run_dir / "lvm"
        sysdir.mkdir(parents=True, exist_ok=True)
        conf = (paths.GUEST_DIR / "lvm.conf").read_text()
        conf = conf.replace('"a|^/dev/vd[a-z]+$|"', f'"a|^{pv}$|"')
        (sysdir / "lvm.conf").write_text(conf)
        in_dir = self.run_dir / "in"
        for rel, data in {**compiled.files, "run.sh": compiled.script.encode()}.items():
            (in_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (in_dir / rel).write_bytes(data)
        lib = self.run_dir / "lib.sh"
        lib.write_text((paths.GUEST_DIR / "lib.sh").read_text() +
                       f'disk() {{ [ "$1" = pv0 ] && echo {shlex.quote(str(pv))}; }}\n')
        out_dir.mkdir(parents=True, exist_ok=True)
        for mod in ("dm_thin_pool", "dm_snapshot"):
            run(["modprobe", mod], check=False)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LVM_SYSTEM_DIR": str(sysdir), "IN": str(in_dir),
               "OUT": str(out_dir), "SNAPTAX_LIB": str(lib)}
        try:
            ran = run_script(in_dir, env, out_dir / "script.log", timeout, decide)
        finally:
            # A failed or interrupted script leaves the VG active on the rig device; deactivate it so the
            # device (a loop device, say) can be released.
            subprocess.run(["lvm", "vgchange", "-q", "-an", VG], env=env, capture_output=True, timeout=120)
        if ran.rc != 0:
            tail = "\n".join((out_dir / "script.log").read_text(errors="replace").splitlines()[-20:])
            raise EngineError(f"lvmthin native script exited {ran.rc}; log tail:\n{tail}")
        return ran

    def execute(self, plan: Plan, session, clock_t0: float | None = None, *, gate: Gate | None = None) -> None:
        """Run the whole plan at once (guest or native) and record each Measure into `session`; `gate` decides the
        gated Measures as the script reaches them (plan.Measure.gate), and those it skipped are not recorded.

        clock_t0 (host monotonic s): put the run on a timeline's clock, as snaptax.timeline does for host-side
        engines: each measurement's extra gets t_start_s/t_end_s and fio's per-second IOPS (vm_series), each
        snapshot/delete event its t_s, from the host's stamps of the script's step lines (host_step_times; in the
        guest its console's, natively its output's), so they can be set against counters sampled on the host
        (timeline.HostSampler)."""
        raw = self.run_dir / "results"
        shutil.rmtree(raw, ignore_errors=True)
        compiled, out = self.run_plan(plan, raw, gate)
        # Step times come from the script's clock (/proc/uptime, 10 ms resolution; in the guest its TCG clock).
        # A Measure's wall_s is the whole fio process, including fio's start-up (about 1 s under TCG, where the
        # dynamic loader relocates fio's ~80 MB of libraries); fio's own runtime is in its JSON.
        steps = _parse_steps(out / "steps.txt")
        # The guest's own logs travel with the run (why a number is what it is may be in dmesg).
        logs = session.engine_logs_dir(self.kind)
        for name in ("script.log", "steps.txt", "host_steps.txt", "integrity.txt", "dmesg.txt"):
            if (out / name).exists():
                shutil.copy2(out / name, logs / name)
        console = self.run_dir / "guest" / "console.log"
        if console.exists():
            shutil.copy2(console, logs / "console.log")
        session.log_event("lvmthin_setup", seconds=_span(steps, "setup"), chunk_size=self.config.chunk_size,
                          zeroing=self.config.zeroing, chain=self.config.chain)
        host = self.host_step_times if clock_t0 is not None else {}
        for ev in compiled.events:
            tag = f"{ev['index']:03d}-{ev['event'] if ev['event'] == 'delete' else 'snapshot'}"
            seconds = _span(steps, tag)
            at = {"t_s": round(host[f"{tag}-begin"] - clock_t0, 3)} \
                if clock_t0 is not None and f"{tag}-begin" in host else {}
            session.log_event(ev["event"], name=ev["name"], chain_length=ev["chain_length"], seconds=seconds,
                              **at, **({"which": ev["which"]} if "which" in ev else {"source": ev["source"]}))
        for index, (step, chain, volume) in sorted(compiled.measures.items()):
            src = out / f"m{index:03d}"
            if step.gate is not None and not src.exists():
                continue     # the host closed its gate: the script skipped it
            directory = session.measurement_dir(index, step)
            for f in src.iterdir():
                shutil.copy2(f, directory / f.name)
            result = fio.read_result(directory, f"measurement {index}")
            before = parse_counters((src / "counters_before.txt").read_text(), self.config.chunk_size)
            after = parse_counters((src / "counters_after.txt").read_text(), self.config.chunk_size)
            broken, provisioned = chunks_broken(before, after, self.config.chunk_size)
            # A counter kept across the plan, so that its difference over a measurement is that measurement's count.
            before["engine.chunks_broken"] = self._shares_broken
            self._shares_broken += broken
            after["engine.chunks_broken"] = self._shares_broken
            self._chain = chain
            end = host.get(f"{index:03d}-fio-end")
            timed = _on_clock(directory, result, end - clock_t0) if clock_t0 is not None and end is not None else {}
            session.record_measurement(index, step, chain_length=chain,
                                       fio_run=FioRun(directory, result, _span(steps, f"{index:03d}-fio")),
                                       counters_before=before, counters_after=after,
                                       extra={"engine": self.kind, "volume": volume,
                                              "chunks_newly_provisioned": provisioned,
                                              "where": "native" if self.native else "tcg-guest", **timed})
        self._chain = compiled.final_chain_length
        session.log_event("lvmthin_run", **self.last_run)


def _on_clock(directory: Path, result: dict, t_end_s: float) -> dict[str, Any]:
    """A guest measurement placed on a host timeline: it ended when the host saw its fio-end step line (t_end_s)
    and started fio's runtime before (the step line before fio is printed ~1 s before fio's job starts under TCG,
    so the end is the better anchor); fio's per-second IOPS (all directions, fiologparser) as timeline.Load
    records them."""
    from ...timeline import vm_series
    runtime = max((float(j.get("job_runtime", j.get("read", {}).get("runtime", 0))) for j in result.get("jobs", [])),
                  default=0.0) / 1e3
    return {"t_start_s": round(t_end_s - runtime, 3), "t_end_s": round(t_end_s, 3),
            "vm_series": vm_series(directory, result)}


# The slowest rate a size-based job (a prefill) may run at in the TCG guest before it counts as stalled: the guest
# prefilled 1 GiB in 1.6 s (flat LV) to 5.5 s (thin volume) on the 2-core build machine (quick run of
# 2026-11-25T15:34); an eleventh of the slower rate still passes.
_SLOWEST_FILL_BYTES_S = 16 * MiB
_STALL_FLOOR_S = 240.0


def stall_limit(plan: Plan, disk_size: int) -> float:
    """Seconds the guest's console may stay silent: twice the longest step of the plan (a time-based fio run's
    runtime and ramp, or a size-based one's bytes at _SLOWEST_FILL_BYTES_S, plus a whole-volume integrity check at
    that rate), at least _STALL_FLOOR_S. Every step prints a line (the script's `step`), so silence beyond this is a
    hang, not a slow step."""
    longest = disk_size / _SLOWEST_FILL_BYTES_S
    for step in plan.steps:
        if isinstance(step, Measure):
            job = step.job
            longest = max(longest, (job.runtime_s or 0) + (job.ramp_time_s or 0) if job.time_based
                          else job.size / _SLOWEST_FILL_BYTES_S)
    return max(_STALL_FLOOR_S, 2 * longest)


STALL_ATTEMPTS = 2


def execute_variant(rig: Rig, device: Device, config: LvmThinConfig, disk_size: int, variant: str, plan: Plan,
                    session, description: dict[str, Any] | None = None,
                    body: Callable[[LvmThinEngine], None] | None = None) -> None:
    """`plan` as variant `variant` of `session` on a fresh engine; when the guest stalls (GuestStalled: nothing was
    recorded), once more on a fresh engine — new daemon, new guest, the physical volume re-created — with the
    stall logged in the run (event 'guest_stalled'). A second stall raises. description: added to the engine's
    in the variant's record; body: what runs the plan on the entered engine (default: engine.execute(plan))."""
    for attempt in range(1, STALL_ATTEMPTS + 1):
        try:
            with LvmThinEngine(rig, device, config, disk_size) as engine:
                with session.in_variant(variant, {**engine.describe(), **(description or {})}):
                    if body is None:
                        engine.execute(plan, session)
                    else:
                        body(engine)
            return
        except GuestStalled as exc:
            session.log_event("guest_stalled", variant=variant, attempt=attempt, of=STALL_ATTEMPTS,
                              message=str(exc)[-3000:])
            if attempt == STALL_ATTEMPTS:
                raise


def _metadata_guess(disk_size: int, config: LvmThinConfig) -> int:
    if config.metadata_size:
        return config.metadata_size
    # lvm's default: 64 bytes per chunk of the pool, at least 2 MiB (rounded generously here; only sizes the PV).
    return max(4 * MiB, _round_up(int(disk_size * config.pool_factor) // config.chunk_size * 64 * 2, MiB))


def _replace(cfg: GuestConfig, **changes) -> GuestConfig:
    import dataclasses
    return dataclasses.replace(cfg, **changes)


def _parse_steps(path: Path) -> dict[str, float]:
    """steps.txt ('TAG-begin|end ... UPTIME' lines) -> {'TAG-begin': t, 'TAG-end': t}."""
    marks: dict[str, float] = {}
    if not path.exists():
        return marks
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2:
            marks[parts[0]] = float(parts[-1])
    return marks


def _span(marks: dict[str, float], tag: str) -> float:
    b, e = marks.get(f"{tag}-begin"), marks.get(f"{tag}-end")
    return (e - b) if b is not None and e is not None else float("nan")


def read_integrity(out_dir: Path) -> list[tuple[str, str, str, str, str]]:
    """integrity.txt -> (status 'ok'|'MISMATCH', step, volume, 'md5'|'bytes', expected md5) rows."""
    path = out_dir / "integrity.txt"
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            p = line.split()
            if len(p) == 5:
                rows.append((p[0], p[1], p[2], p[3], p[4]))
    return rows
