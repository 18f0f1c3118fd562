"""nbdkit Python plugin: the copy-on-first-write volume as NBD exports. Runs under the system python3; stdlib only.

    nbdkit -f -U SOCK [--filter=blocksize minblock=4096] python nbdkit_plugin.py \
        source=FILE snapdir=DIR control=CTLSOCK [size=BYTES] \
        [page_size=8192] [durability=sync|none] [direct=0|1] [stripes=4096]
        [snapdev=NBD-URI|PATH [snapdev_connections=4] [extent_size=65536]]

Exports: "live" (default, writable) and "snap-NAME" (read-only point-in-time view of snapshot NAME).

One nbdkit for all exports, not one per export: a write to the live volume must consult and update every
snapshot's bitmap under the same page locks, and a snapshot view must see copies the moment they are marked.
Separate processes would need shared memory and cross-process locks for what is here a bytearray and a Lock.

Snapshots found in snapdir at start (`NAME.snap`) are re-attached, i.e. recovered (see core's crash semantics).
With snapdev, the snapshots' pages go to that device in extents (see extents.py) and snapdir holds their maps
(`NAME.map`), re-attached the same way.
Control (create/delete/list/counters) is a unix socket served by a thread (see control.py).
"""
import errno
import os
import sys

# nbdkit loads this file by path; make the snaptax package (src/) importable without relying on PYTHONPATH.
_SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

import nbdkit  # noqa: E402  (provided by nbdkit's python plugin)

from snaptax.cofw.control import ControlServer  # noqa: E402
from snaptax.cofw.core import MAP_SUFFIX, SNAPSHOT_SUFFIX, CofwConfig, CofwVolume, snapshot_files  # noqa: E402
from snaptax.cofw.extents import open_client  # noqa: E402

API_VERSION = 2

_cfg = {"page_size": "8192", "durability": "sync", "direct": "0", "stripes": "4096", "extent_size": "65536",
        "snapdev_connections": "4"}
_volume = None
_control = None
_KEYS = ("source", "snapdir", "control", "page_size", "durability", "direct", "stripes", "size", "snapdev",
         "snapdev_connections", "extent_size")


def config(key, value):
    if key not in _KEYS:
        raise RuntimeError(f"unknown parameter {key!r} (known: {', '.join(_KEYS)})")
    _cfg[key] = value


def config_complete():
    for key in ("source", "snapdir", "control"):
        if key not in _cfg:
            raise RuntimeError(f"missing parameter {key}=")


def _config():
    return CofwConfig(page_size=int(nbdkit.parse_size(_cfg["page_size"])), durability=_cfg["durability"],
                      direct=_cfg["direct"] in ("1", "true", "on", "yes"), stripes=int(_cfg["stripes"]),
                      extent_size=int(nbdkit.parse_size(_cfg["extent_size"])))


def _suffix():
    return MAP_SUFFIX if "snapdev" in _cfg else SNAPSHOT_SUFFIX


def get_ready():
    global _volume
    size = int(nbdkit.parse_size(_cfg["size"])) if "size" in _cfg else None
    config = _config()
    device = None
    if "snapdev" in _cfg:
        target = _cfg["snapdev"]
        if os.path.exists(target) and os.path.samefile(target, _cfg["source"]):
            raise RuntimeError(f"snapdev={target} is the source itself: snapshots need a device of their own")
        device = open_client(target, direct=config.direct, connections=int(_cfg["snapdev_connections"]))
    _volume = CofwVolume(_cfg["source"], config, size=size, snapshot_device=device)
    for name, path in snapshot_files(_cfg["snapdir"], _suffix()):
        _volume.attach_snapshot(name, path)


def after_fork():
    # Threads must start after nbdkit's (optional) fork into the background.
    global _control
    _control = ControlServer(_cfg["control"], _handle_control)
    _control.start()


def cleanup():
    if _control is not None:
        _control.close()
    if _volume is not None:
        _volume.close()
        if _volume.snapshot_device is not None:
            _volume.snapshot_device.close()


def _handle_control(req):
    op = req["op"]
    if op == "ping":
        return "pong"
    if op == "create":
        name = str(req.get("name", ""))
        snap = _volume.create_snapshot(name, os.path.join(_cfg["snapdir"], name + _suffix()))
        return {"name": snap.name, "path": str(snap.path), "export": "snap-" + snap.name}
    if op == "delete":
        _volume.delete_snapshot(str(req.get("name", "")), remove_file=not req.get("keep_file", False))
        return {"name": req.get("name")}
    if op == "list":
        return [s.name for s in _volume.snapshots]
    if op == "counters":
        return _volume.counters_dict()
    raise ValueError(f"unknown op {op!r}")


def thread_model():
    return nbdkit.THREAD_MODEL_PARALLEL


def list_exports(readonly, is_tls):
    return ["live"] + ["snap-" + s.name for s in _volume.snapshots]


def default_export(readonly, is_tls):
    return "live"


class _Handle:
    __slots__ = ("snap",)

    def __init__(self, snap):
        self.snap = snap          # None: the live volume


def open(readonly):
    name = nbdkit.export_name() or "live"
    if name == "live":
        return _Handle(None)
    if name.startswith("snap-"):
        try:
            return _Handle(_volume.snapshot(name[5:]))
        except Exception:
            nbdkit.set_error(errno.ENOENT)
            raise
    nbdkit.set_error(errno.ENOENT)
    raise RuntimeError(f"no export {name!r}: 'live' or 'snap-NAME'")


def get_size(h):
    return _volume.size


def block_size(h):
    # With O_DIRECT the blocksize filter in front of us already enforces 4096; advertise it for polite clients.
    minimum = 4096 if _volume.config.direct else 1
    return (minimum, max(minimum, min(_volume.page_size, 65536)), 32 * 1024 * 1024)


def can_write(h):
    return h.snap is None


def can_flush(h):
    return True


def can_fua(h):
    return nbdkit.FUA_EMULATE


def can_multi_conn(h):
    # One process, one set of file descriptors: a flush on any connection covers writes from all of them.
    return True


def is_rotational(h):
    return False


def pread(h, buf, offset, flags):
    if h.snap is None:
        _volume.read_into(buf, offset)
    else:
        _volume.snapshot_read_into(h.snap, buf, offset)


def pwrite(h, buf, offset, flags):
    _volume.write(buf, offset)


def flush(h, flags):
    _volume.flush()
