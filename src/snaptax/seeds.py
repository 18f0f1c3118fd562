"""The five seed documents the paper reproduces, as data: what each measured, which studies reproduce it (those
registered now and those planned), which claims carry its headline, and which models in `snaptax.models` explain it.

The results-at-a-glance table (`snaptax.paper.article`) is generated from this list, the studies' claim outcomes and the
models that exist, so that a row fills itself when its study lands. A seed's published headline comes from its
claims (`claims.Claim`, with its place in the source); only a seed that no claim tests yet carries its headline
here, as a cited reference value with its place, never as our number.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec


@dataclass(frozen=True)
class Model:
    module: str          # a module of snaptax.models
    explains: str        # what it explains for this seed, in words


@dataclass(frozen=True)
class Seed:
    id: str                               # '000' .. '004'
    cite: str                             # BibTeX key (paper/refs.bib)
    measured: str                         # what the document measured, in words
    studies: tuple[str, ...]              # study ids that reproduce it (registered or planned)
    headline_claims: tuple[str, ...] = () # claim ids; the first one a run tests is the row's headline
    published: str = ""                   # headline for a seed no claim tests yet (a cited reference value) ...
    where: str = ""                       # ... and its place in the source
    models: tuple[Model, ...] = ()

    def models_present(self) -> tuple[Model, ...]:
        """The models of this seed that exist in snaptax.models."""
        return tuple(m for m in self.models if model_exists(m.module))


def model_exists(module: str) -> bool:
    return find_spec(f"snaptax.models.{module}") is not None


SEEDS: tuple[Seed, ...] = (
    Seed("000", "zandboer",
         "IOmeter 4 KiB reader and writer on a local 10K RAID1: host- vs VM-level I/O with a snapshot and while it "
         "is deleted",
         ("calibration", "lifecycle"), ("calibration.reads_double",),
         models=(Model("seek", "seek curve of the emulated 10K drives"),
                 Model("lifecycle", "consolidation convergence"))),
    Seed("001", "setty2021",
         "fio randrw / readwrite 4 KiB vs snapshot chain length 0\u201312 on VMFS, vSAN and vVOL; create then delete",
         ("chain_length", "engines", "metadata_cache"), ("chain_length.loss.on-disk-metadata.randrw",),
         models=(Model("chain", "cost of the first and of each further layer"),
                 Model("metadata_cache", "loss from the redo log's L2 cache misses"),
                 Model("cow", "first-write copy per grain (vVOL stand-in)"))),
    Seed("002", "kanap",
         "IOmeter 32 KiB, 80\u2009% read, 90\u2009% random on a Storwize V7000, SAS only and SAS + SSD Easy Tier: "
         "IOPS before, with, during and after consolidation",
         ("tiering",), ("tiering.C002-2a", "tiering.C002-1a"),
         published="with a snapshot 12\u2009% of the initial IOPS (SAS only), 3.6\u2009% (SAS + SSD Easy Tier)",
         where="its two IOPS tables",
         models=(Model("tiering", "IOPS from the share of I/O on SSD extents (misplacement)"),)),
    Seed("003", "lavallee2013",
         "lazy checkpoint of a 4 GiB VM's memory: mainMem.ioBlockPages and mainMem.ioWait, defaults vs tuned",
         ("memory_dump",), ("memory_dump.default_4gib",),
         models=(Model("memory_dump", "dump time from block size, wait and device"),)),
    Seed("004", "kehayias",
         "1,000,000-row SELECT INTO with 0, 1 or 2 SQL Server database snapshots on 15K RAID5 vs PCIe SSD",
         ("db_snapshots",), ("db_snapshots.C004-1", "db_snapshots.C004-3"),
         published="baseline 1.8 s; one database snapshot costs even on equally fast storage, a second costs less "
                   "than the first",
         where="Figure 1 and its text",
         models=(Model("db_snapshot", "duration from first-written pages, per-page copy cost and the second "
                                      "snapshot's overlap"),
                 Model("cow", "copy-out of 8 KiB pages (engines study)"))),
)


def get(seed_id: str) -> Seed:
    for s in SEEDS:
        if s.id == seed_id:
            return s
    raise KeyError(f"unknown seed {seed_id!r} (one of: {', '.join(s.id for s in SEEDS)})")
