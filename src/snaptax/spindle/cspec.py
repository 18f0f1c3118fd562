"""The device as the C emulator reads it: flat `key=value` lines written from the Python Simulator built for the
same spec (stdlib only).

One source of truth for parameters: the C core (spindle_core.c) does not fit seek curves or scale geometry
itself; it reads the numbers the Python model computed (Geometry's k, ρ̄, R, cylinders; both SeekCurves'
coefficients; the estimate of one queued command; a RAID5's stripe rows; a pool's extents, SSD slots and
pacing), printed with repr() so that strtod() reads back the very same doubles. Profile fields that the model
uses as given (rates, overheads, sizes) are written as given.

    format=snaptax-spindle 1
    name=NAME           capacity=BYTES      members=M     volumes=V
    m<i>.*              member i of Simulator.members (kind disk|ssd|zero, name, ...)
    v<j>.*              volume j of Simulator.volumes (v0 is the device; kind single|raid1|raid5|tier;
                        members: indices of Volume.members; a tier names its two volumes by index, a
                        controller cache (kind cache) the volume behind it)

Members and volumes are numbered in the Simulator's own order, which is also the order ties between events at
the same time are broken in.
"""
from __future__ import annotations

from .arrays import Raid1, Raid5, Simulator, Single, Tier
from .ctrlcache import ControllerCache
from .model import Disk, Member, SeekCurve, Ssd
from .profiles import DeviceSpec
from .volume import Volume

FORMAT = "snaptax-spindle 1"


def _f(x: float) -> str:
    return repr(float(x))


def _curve(prefix: str, c: SeekCurve) -> list[str]:
    return [f"{prefix}.{k}={_f(getattr(c, k))}" for k in ("a", "b", "c", "e", "d_b")]


def _member(i: int, m: Member) -> list[str]:
    p = f"m{i}"
    out = [f"{p}.name={m.name}"]
    if isinstance(m, Disk):
        g, prof = m.geo, m.p
        out += [f"{p}.kind=disk", f"{p}.k={_f(g.k)}", f"{p}.rho_bar={_f(g.rho_bar)}", f"{p}.used={_f(g.used)}",
                f"{p}.t_rev={_f(g.t_rev)}", f"{p}.revs={_f(g.revs)}", f"{p}.cylinders={_f(g.cylinders)}",
                *_curve(f"{p}.seek_r", m.seek_r), *_curve(f"{p}.seek_w", m.seek_w),
                f"{p}.queued_cmd_s={_f(m.queued_cmd_s)}", f"{p}.overhead={_f(m.overhead)}",
                f"{p}.iface={_f(m.iface)}", f"{p}.starvation_ms={_f(prof.starvation_ms)}",
                f"{p}.queue_depth={int(prof.queue_depth)}", f"{p}.scheduler={prof.scheduler}",
                f"{p}.write_cache={int(bool(prof.write_cache))}",
                f"{p}.write_cache_bytes={int(prof.write_cache_bytes)}",
                f"{p}.readahead_bytes={int(prof.readahead_bytes)}"]
    elif isinstance(m, Ssd):
        s = m.p
        out += [f"{p}.kind=ssd", f"{p}.read_us={_f(s.read_us)}", f"{p}.write_us={_f(s.write_us)}",
                f"{p}.read_mb_s={_f(s.read_mb_s)}", f"{p}.write_mb_s={_f(s.write_mb_s)}",
                f"{p}.channels={int(s.channels)}"]
    else:
        out.append(f"{p}.kind=zero")
    return out


def _volume(j: int, v: Volume, mids: dict[int, int], vids: dict[int, int]) -> list[str]:
    p = f"v{j}"
    out = [f"{p}.capacity={int(v.capacity)}", f"{p}.members={','.join(str(mids[id(m)]) for m in v.members)}"]
    if isinstance(v, Single):
        out.append(f"{p}.kind=single")
    elif isinstance(v, Raid1):
        out.append(f"{p}.kind=raid1")
    elif isinstance(v, Raid5):
        out += [f"{p}.kind=raid5", f"{p}.n={v.n}", f"{p}.su={v.su}", f"{p}.row_bytes={v.row_bytes}"]
    elif isinstance(v, Tier):
        s = v.spec
        cap = s.max_migrations_per_cycle
        out += [f"{p}.kind=tier", f"{p}.ssd={vids[id(v.ssd)]}", f"{p}.hdd={vids[id(v.hdd)]}",
                f"{p}.extent_bytes={int(s.extent_bytes)}", f"{p}.n_ext={v.n_ext}", f"{p}.ssd_slots={v.ssd_slots}",
                f"{p}.cycle_s={_f(s.cycle_s)}", f"{p}.window_cycles={int(s.window_cycles)}",
                f"{p}.heat_max_io_bytes={int(s.heat_max_io_bytes)}", f"{p}.move_interval_s={_f(v.move_interval_s)}",
                f"{p}.max_migrations={-1 if cap is None else int(cap)}",
                f"{p}.migration_chunk_bytes={int(s.migration_chunk_bytes)}",
                f"{p}.new_allocation={s.new_allocation}"]
    elif isinstance(v, ControllerCache):
        c = v.spec
        out += [f"{p}.kind=cache", f"{p}.array={vids[id(v.array)]}", f"{p}.segment={int(v.segment)}",
                f"{p}.size_pages={v.size_pages}", f"{p}.high_pages={v.high_pages}", f"{p}.low_pages={v.low_pages}",
                f"{p}.write_back={int(v.write_back)}", f"{p}.battery_backed={int(bool(c.battery_backed))}",
                f"{p}.watermark={int(v.watermark)}", f"{p}.destage_depth={int(c.destage_depth)}",
                f"{p}.overhead={_f(v.overhead)}", f"{p}.link={_f(v.link)}"]
    else:  # pragma: no cover - build_volume makes only these
        raise TypeError(f"no C form for volume {type(v).__name__}")
    return out


def flat_spec(spec: DeviceSpec, capacity: int, name: str = "array") -> str:
    """The C emulator's spec for `spec` served with `capacity` bytes under `name` (as Simulator(spec, capacity,
    name) names its counters)."""
    if any(c in name for c in "\n="):
        raise ValueError(f"device name {name!r}: no newline or '=' (the flat format's separators)")
    sim = Simulator(spec, capacity, name)
    mids = {id(m): i for i, m in enumerate(sim.members)}
    vids = {id(v): j for j, v in enumerate(sim.volumes)}
    lines = [f"format={FORMAT}", f"name={name}", f"capacity={int(capacity)}", f"members={len(sim.members)}",
             f"volumes={len(sim.volumes)}"]
    for i, m in enumerate(sim.members):
        lines += _member(i, m)
    for j, v in enumerate(sim.volumes):
        lines += _volume(j, v, mids, vids)
    return "\n".join(lines) + "\n"
