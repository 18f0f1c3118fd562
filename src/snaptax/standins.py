"""The stand-in record: for each seed system, the mechanism the seed names, the engine setting that carries it, and
where that setting's value comes from — documented for that system (cited), or inferred from one seed statement
through a sweep (the statement then calibrates and is not judged: its registration's role is `calibration`).

One operating point per seed system, used by every study that stands in for it. A setting chosen to make a verdict
come out is not allowed; this record makes every choice visible, and the paper prints it (render: stand-ins table).
Where a documented value exists only as a bound (seed 002's metadata heap), the inference must land inside it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Source = Literal["documented", "inferred", "by construction"]


@dataclass(frozen=True)
class StandIn:
    id: str                  # what the registration's stand_in names
    seed: str                # '000' … '004'
    system: str              # the seed's system, in words
    mechanism: str           # what the seed says causes the cost, in its words or close to them
    engine: str              # our engine and the setting that carries the mechanism
    setting: str             # the setting's name (the quantity the operating point fixes)
    source: Source
    basis: str               # documented: the citation; inferred: how (sweep, model); by construction: why
    calibrating: str = ""    # inferred: the registered claim id the operating point is inferred from
    value_key: str = ""      # inferred: the Value holding the inferred operating point (with its interval)
    bound: str = ""          # a documented bound the inferred value must respect ('' for none)


STAND_INS: tuple[StandIn, ...] = (
    StandIn("esx35_redolog", "000", "ESX 3.5 redo-log snapshot (vmfsSparse) on a local 10K SAS RAID1",
            "every VM read with a snapshot reads the redo log's block map as well as the data: two host reads",
            "a qcow2 overlay (64 KiB clusters, extended L2) over a raw base on the emulated 10K RAID1",
            "L2-cache coverage c (fraction of the overlay's L2 tables cached)", "inferred",
            "the coverage at which the calibration study's reads-double runs, on the stand-in's own device, cost "
            "the seed's 2 host reads per VM read: read off a sweep of coverages in one run (interpolated between "
            "the two that bracket it); runs before the sweep took it from one coverage through h(c) = 1 + (1 − c)·s_r "
            "(s_r: host reads per read miss), which missed at QEMU's least cache",
            calibrating="calibration.reads_double", value_key="calibration.implied.esx35.coverage",
            bound="vmfsSparse grain tables are read through the host's metadata heap (at most 192 MiB per host, KB "
                  "343426): not a bound on a 1 GiB test file's tables"),
    StandIn("vmfs_sesparse", "001", "VMFS6 SEsparse snapshot (vSphere 7.0 U2, SATA SSD)",
            "grain-table lookups of the delta disk (4 KiB grains, 16 MiB per grain table) not held in memory",
            "a qcow2 overlay (64 KiB clusters, extended L2) on the SSD-class device",
            "L2-cache coverage c", "inferred",
            "the coverage at which the metadata-cache model (fitted on the coverage sweep) loses Table 1's 65 % "
            "for the random FIO job", calibrating="chain_length.loss.on-disk-metadata.randrw",
            value_key="metadata_cache.implied.vmfs.coverage"),
    StandIn("vsan_sparse", "001", "vSAN 7.0 U2 vsanSparse snapshot",
            "an in-memory metadata cache (its size is not documented: the vsanSparse tech note)",
            "a qcow2 overlay (64 KiB clusters, extended L2) on the SSD-class device",
            "L2-cache coverage c", "inferred",
            "the coverage at which the metadata-cache model loses Table 1's 35 % for the random FIO job",
            calibrating="chain_length.loss.in-memory-metadata.randrw",
            value_key="metadata_cache.implied.vsan.coverage"),
    StandIn("vvol_native", "001", "vVOL array-native snapshot (Dell EMC PowerStore)",
            "the array redirects writes; deleting a snapshot commits nothing (vSphere 8 storage documentation)",
            "LVM thin (dm-thin, 64 KiB chunks) in a TCG guest, a thin snapshot per chain layer",
            "chunk size 64 KiB", "documented",
            "dm-thin's default chunk size for a pool of this size (lvmthin(7)); no cache setting: dm-thin keeps its "
            "mapping in memory (dm-persistent-data's block manager)"),
    StandIn("vmfs5_redolog_v7000", "002", "vSphere 5.5 redo-log snapshot (vmfsSparse) on a Storwize V7000 pool",
            "the snapshot's new blocks are new data and land on the SAS tier until the next 24-h cycle; the redo "
            "log reads its block map besides the data",
            "a qcow2 overlay over a raw base on the emulated V7000 pools without their cache (SAS-only RAID5; SAS + "
            "10 % SSD Easy Tier)",
            "L2-cache coverage c", "inferred",
            "where the emulated SAS-only pool keeps the seed's 12.2 % with a snapshot (swept)",
            calibrating="tiering.C002-1a", value_key="tiering.implied.coverage",
            bound="a full 100 GB delta's 800 MiB of grain tables, a host metadata heap of at most 192 MiB "
                  "(KB 343426): at most 24 % cached"),
    StandIn("checkpoint_walker", "003", "ESX lazy checkpoint of a 4 GiB VM's memory (mainMem.ioBlockPages / ioWait)",
            "16384 writes of 64 pages each with a 25-ms wait between them; the measured 334 s is below the "
            "author's 16384 × 25 ms = 409.6 s",
            "a fio page walker on the emulated 10K RAID1 and the SSD-class device; on the RAID1 also one whose "
            "waits overlap its writes and one that skips the share z of the memory, each skipped block with its wait "
            "(the claims' walker)",
            "the share z of blocks skipped as all-zero", "inferred",
            "z = 1 − 333.95 s / T, T the walker's default time for 4 GiB (the seed's default timing); realised in "
            "whole blocks of the grid's largest (8 MiB)",
            calibrating="memory_dump.default_4gib", value_key="memory_dump.implied.zero_fraction.raid1_10k"),
    StandIn("sql_snapshot", "004", "SQL Server 2012 database snapshot (sparse files on NTFS)",
            "before a page is first changed, its 8 KiB image is pushed synchronously to every snapshot's sparse file",
            "the copy-on-first-write engine (a C nbdkit plugin): 8 KiB pages, 64 KiB allocation units, copies durable "
            "before the write, one per snapshot, by one pusher",
            "page 8 KiB, allocation 64 KiB, synchronous copy", "documented",
            "Microsoft Learn: How Database Snapshots Work, Understanding Sparse File Sizes (64 KB units); MSDN "
            "blog archive: the statement's thread pushes, its work the seed's 1.8 s per table"),
)


def get(stand_in: str) -> StandIn:
    for s in STAND_INS:
        if s.id == stand_in:
            return s
    raise KeyError(f"no stand-in {stand_in!r} (snaptax.standins.STAND_INS)")


__all__ = ["Source", "StandIn", "STAND_INS", "get"]
