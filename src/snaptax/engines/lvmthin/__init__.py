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

Modules:
  config.py    LvmThinConfig (one thin-pool configuration) and the names of the volume group and its volumes
  script.py    the plan compiled into one sh script (compile_plan), its gate questions answered (gate_decider),
               the script run natively (run_script)
  counters.py  the script's counter lines read into snaptax.counters' names (parse_counters, chunks_broken)
  engine.py    LvmThinEngine (natively or in the TCG guest), execute_variant (a stalled guest run once more)
"""
