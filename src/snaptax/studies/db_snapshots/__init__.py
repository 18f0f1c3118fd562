"""Seed 004: SQL Server database snapshots (copy-on-first-write of 8 KiB pages) with 0, 1 or 2 snapshots on a 15K
RAID5 or an SSD, and the database-snapshot cost model.

plan → measure → analyse → present; see CONTRIBUTING.md."""
