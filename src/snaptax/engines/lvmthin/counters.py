"""The script's counter lines (`counters`: the PVs' and the live volume's stat, the pool's status, the CPU)
read into the names of snaptax.counters, and the chunks a write broke."""
from __future__ import annotations

from ...errors import MeasurementError
from ...host.procs import cpu_times

_STAT = ("reads", "reads_merged", "sectors_read", "read_ms", "writes", "writes_merged", "sectors_written",
         "write_ms", "in_flight", "io_ms", "weighted_io_ms")
USER_HZ = 100     # /proc/stat's tick (Linux's USER_HZ on x86)
_KEEP = ("reads", "writes", "sectors_read", "sectors_written", "io_ms")


def parse_counters(text: str, chunk_size: int) -> dict[str, float]:
    """The lines written by the script's `counters` function -> counters named as in snaptax.counters."""
    out: dict[str, float] = {f"host.{k}": 0.0 for k in _KEEP}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        kind = parts[0]
        if kind == "pv":  # pv SERIAL f1 ... f17: summed over PVs, as "what the device received"
            for k, v in zip(_STAT, parts[2:], strict=False):   # newer kernels append fields
                if k in _KEEP:
                    out[f"host.{k}"] += float(v)
        elif kind == "lv":
            for k, v in zip(_STAT, parts[2:], strict=False):
                if k in _KEEP:
                    out[f"guest.{k}"] = float(v)
        elif kind == "pool":
            # pool NAME: 0 LEN thin-pool TID USED_META/TOTAL_META USED_DATA/TOTAL_DATA ...
            f = parts[1:]
            if "thin-pool" not in f:
                raise MeasurementError(f"unexpected thin-pool status: {line}")
            i = f.index("thin-pool")
            meta_used, meta_total = f[i + 2].split("/")
            data_used, data_total = f[i + 3].split("/")
            # The pool's usage in per cent, as lvs prints it, from the same status line: counters run before and
            # after every measurement, and lvs (the lvm binary scanning its devices) cost ~0.5 s each under TCG.
            out.update({"engine.pool_data_percent": 100.0 * float(data_used) / float(data_total),
                        "engine.pool_metadata_percent": 100.0 * float(meta_used) / float(meta_total)})
            out.update({"engine.pool_transaction_id": float(f[i + 1]),
                        "engine.pool_meta_used_blocks": float(meta_used),
                        "engine.pool_meta_total_blocks": float(meta_total),
                        "engine.pool_data_used_chunks": float(data_used),
                        "engine.pool_data_total_chunks": float(data_total)})
        elif kind == "cpu":  # /proc/stat's first line (ticks of USER_HZ)
            t = cpu_times(line, USER_HZ)
            out["guest.cpu_busy_s"], out["guest.cpu_idle_s"] = t.busy_s, t.idle_s
        elif kind == "thin":  # thin LV NAME: 0 LEN thin MAPPED_SECTORS HIGHEST|-
            f = parts[2:]
            i = f.index("thin")
            out["engine.live_mapped_sectors"] = float(f[i + 1])
    if "engine.pool_data_used_chunks" in out and "engine.live_mapped_sectors" in out:
        out["engine.snapshot_allocated_bytes"] = _held_chunks(out, chunk_size) * chunk_size
    return out


def _held_chunks(c: dict[str, float], chunk_size: int) -> float:
    """Pool data chunks the live volume does not map: in a fan of snapshots of the live volume (or a stack whose
    newest layer is live) the chunks only snapshots hold."""
    return c["engine.pool_data_used_chunks"] - c["engine.live_mapped_sectors"] / (chunk_size // 512)


def chunks_broken(before: dict[str, float], after: dict[str, float], chunk_size: int) -> tuple[float, float]:
    """(chunks whose sharing was broken, chunks newly provisioned) during one Measure of the live volume.

    A write to an unmapped chunk grows both the pool and the live volume's mapping; a write to a shared chunk
    allocates a pool chunk while the live mapping stays the same size (the chunk is remapped, not added).
    """
    new = (after["engine.live_mapped_sectors"] - before["engine.live_mapped_sectors"]) / (chunk_size // 512)
    return _held_chunks(after, chunk_size) - _held_chunks(before, chunk_size), new


