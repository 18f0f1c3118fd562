"""Emulated spindles: a mechanical disk model (and RAID1 / RAID5 / tiered arrays of it) served over NBD.

Layout
  profiles.py  typed drive / SSD profiles and device specs (stdlib only: also imported inside nbdkit)
  model.py     one drive: geometry, Ruemmler–Wilkes seek curve, rotation, NCQ queue, caches, counters
  volume.py    what every volume is (Volume, Join): shared by arrays.py and ctrlcache.py
  arrays.py    volumes over drives (single, RAID1, RAID5, tiered pool) and the event-driven Simulator
  ctrlcache.py an array controller's write cache in front of a volume (optional, rig files' `cache:`)
  predict.py   closed-loop runs of the Simulator without real time (what the model predicts)
  spindle_core.c/.h  the same model in C (a line-by-line transcription of model.py + arrays.py), in simulated time
  spindle_plugin.c   the compiled nbdkit plugin around it (the default emulator): replies timed by their own threads
  cspec.py     the device as the C core reads it (flat key=value, from the Python Simulator: one source of truth)
  cmodel.py    the C core in-process through ctypes (the trace-equivalence test, offline placement cost)
  build.py     compiles the plugin and the core (make setup; serve() rebuilds a stale plugin)
  plugin.py    the nbdkit python plugin (runs under the system python3, stdlib only; serve(plugin="python"))
  serve.py     serve(): start nbdkit with the plugin inside a ProcessGroup, yield the NBD URI
  measure.py   fio jobs for calibrating a spindle, ServedSpindle (executes a Plan of Measure steps on a served
               device), and what the per-request seek fit reads back
  rigfiles.py  drive profiles and device specs from YAML (rigs/spindles/, the rig's `spindle:` mapping)
Its benchmarks (accuracy and overhead: `python -m snaptax bench --only spindle`) are snaptax.bench.spindle.

This __init__ deliberately imports nothing: the nbdkit plugin imports model/arrays under a bare
stdlib interpreter, and serve/rigfiles pull in the rest of the package.
"""

# The emulator's version, recorded in every run that measured an emulated device (record.schema.EMULATOR_VERSIONS
# says what each changed): raise it with any change to the timing a device is served with.
EMULATOR_VERSION = 3
