"""Engine comparison: what a snapshot costs per guest write, as a function of the engine's grain (qcow2 clusters,
LVM thin chunks, copy-on-first-write pages).

plan → measure → analyse → present; see CONTRIBUTING.md."""
