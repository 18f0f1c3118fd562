"""Seed 001 (Setty & Nag 2021): guest I/O versus snapshot chain length, and the mirror image on delete.

plan → measure → analyse → present; see CONTRIBUTING.md."""
