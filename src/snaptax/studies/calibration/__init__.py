"""Rigs and calibration: what the emulated spindles do, the seek curve recovered from their requests, and seed
000's "reads double" behind a qcow2 snapshot on the emulated 10K RAID1.

plan → measure → analyse → present; see CONTRIBUTING.md."""
