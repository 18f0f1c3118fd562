"""Seed 001, what its losses mean: the loss with one snapshot against how much of the redo log's L2 tables the
metadata cache holds, the metadata reads each guest I/O costs, and the cache-cost model
(snaptax.models.metadata_cache) that reads seed 001's 65 % (VMFS) and 35 % (vSAN) as cache coverages.

plan → measure → analyse → present; see CONTRIBUTING.md."""
