"""Seed 003: how long a VM's memory takes to dump. VMware's lazy-checkpoint page-walker (ioBlockPages pages per
write, ioWait ms between writes) as a fio job over a grid of both, on the rig's SSD-class device and an emulated
10K RAID1, and the dump-time models (snaptax.models.memory_dump) that explain the seed's 334 s against its own
410 s estimate.

The study id is `memory_dump`, with an underscore, everywhere in the repository (issue 11 writes `memory-dump`).

plan → measure → analyse → present; see CONTRIBUTING.md."""
