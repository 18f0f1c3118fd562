"""The host side: this machine, its devices and the daemons and processes the studies run on it.

    procs.py     the one place child processes (daemons, guests, fio) are started and stopped: ProcessGroup,
                 run with a timeout, the machine's CPU times
    qmp.py       a QMP client (qemu-storage-daemon, qemu-system)
    qsd.py       qemu-storage-daemon: started, driven over QMP, exported over NBD; a device cut into regions
    rig.py       rig files (rigs/*.yaml): the typed schema of a rig and its devices
    devices.py   block-device identity, host I/O counters, and the safety checks guarding real devices
    backends.py  from a rig device to what an engine puts images on (loop device, block device, served spindle)
    blkio.py     throttled devices: a rig device's own rates as a cgroup v1 blkio group the engine's server joins
"""
