"""Seed 001's large-I/O and clone experiments: 512 KiB sequential reads and writes and the time to fully clone the
volume, against the length of the snapshot chain, for the chain study's two qcow2 presets.

plan → measure → analyse → present; see CONTRIBUTING.md."""
