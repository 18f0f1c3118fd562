"""Seed 000: the whole snapshot lifecycle on the emulated 10K RAID1 (timelines of VM-level against host-level
reads and writes per second at two load levels, three ways to delete a snapshot under load) and a model of when
consolidation by iterative helper snapshots converges (snaptax.models.consolidation).

plan → measure → analyse → present; see CONTRIBUTING.md."""
