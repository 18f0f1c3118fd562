"""Seed 002: snapshots on an SAS-only and an SAS + SSD Easy Tier pool, and the tiering misplacement model.

plan → measure → analyse → present; see CONTRIBUTING.md."""
