"""`make bench`: speed and size of the harness and engines, stated as measured figures.

Writes a flat JSON object (name → number) to bench/latest.json and prints it as a table, with the machine and
revision that measured it as flat `meta_*` keys beside the figures (commit, whether the tree was dirty, UTC date,
kernel, CPU count and model, the groups that run measured), and the same per group as `meta_<group>_*`: with
`--only`, the other groups' figures are kept from earlier runs, with their own provenance. Groups:
  harness  fio through the measurement path (NBD → qemu-storage-daemon, raw, no snapshot; one connection and
           two; the file node with io_uring instead of native AIO; a null backend) versus fio with libaio
           direct=1 on the very device qsd reads, rotating rounds;
           median ratios of IOPS and the CPU per I/O of each path.
  spindle  emulator accuracy and overhead (snaptax.bench.spindle), when present
  guest    TCG guest boot time (snaptax.bench.guest), when present
  cofw     copy-on-first-write engine versus the raw NBD path (snaptax.bench.cofw), when present
  crosscheck  the loss with one snapshot measured in-process by `qemu-img bench`, without the transport
           (snaptax.bench.crosscheck), when present
  models   the seek likelihood per evaluation and a whole per-request seek fit (snaptax.bench.models)
"""
from __future__ import annotations

import importlib
import json
from collections.abc import Callable

from .. import paths, provenance
from ..errors import ConfigError
from ..record import write_atomic
from . import harness


def _optional(module: str, function: str) -> Callable[[], dict[str, float]] | None:
    try:
        mod = importlib.import_module(f"{__name__}.{module}")
    except ImportError:
        return None
    fn = getattr(mod, function, None)
    if fn is None:
        return None

    def call() -> dict[str, float]:
        value = fn()
        return value if isinstance(value, dict) else {function: float(value)}
    return call


def groups() -> dict[str, Callable[[], dict[str, float]]]:
    found: dict[str, Callable[[], dict[str, float]] | None] = {
        "harness": harness.harness,
        "spindle": _optional("spindle", "run"),
        "guest": _optional("guest", "bench"),
        "cofw": _optional("cofw", "bench"),
        "crosscheck": _optional("crosscheck", "run"),
        "models": _optional("models", "run"),
    }
    return {k: v for k, v in found.items() if v is not None}


Figure = float | int | str | bool | None


def _where(prefix: str) -> dict[str, Figure]:
    git, host = provenance.git_state(), provenance.host()
    return {f"{prefix}commit": git["commit"], f"{prefix}commit_dirty": git["dirty"],
            f"{prefix}date_utc": provenance.utc_now(), f"{prefix}kernel": host["kernel"],
            f"{prefix}cpus": host["cpus"], f"{prefix}cpu_model": host["cpu"]}


def meta(groups_run: list[str]) -> dict[str, Figure]:
    """Where and when the latest run measured, as flat keys (bench/latest.json stays one flat object)."""
    return {**_where("meta_"), "meta_groups": ",".join(groups_run)}


def group_meta(name: str) -> dict[str, Figure]:
    """Where and when group `name`'s figures were measured (`meta_<name>_*`): with --only the other groups' figures
    are kept from earlier runs, on other commits or machines, and their provenance is kept with them."""
    return _where(f"meta_{name}_")


def _show(value: Figure) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def main(only: list[str] | None = None) -> dict[str, Figure]:
    available = groups()
    selected = only or list(available)
    unknown = [name for name in selected if name not in available]
    if unknown:  # before anything is measured
        raise ConfigError("snaptax bench", "--only", f"unknown benchmark group(s) {', '.join(map(repr, unknown))} "
                          f"(have: {', '.join(available)})")
    path = paths.BENCH_LATEST
    results: dict[str, Figure] = json.loads(path.read_text()) if path.exists() and only else {}
    done: list[str] = []
    for name in selected:
        print(f"bench {name} ...", flush=True)
        results.update(available[name]())
        done.append(name)
        results.update(group_meta(name))
        results.update(meta(done))
        write_atomic(path, json.dumps(results, indent=1, sort_keys=True) + "\n")
    width = max(len(k) for k in results)
    for key in sorted(results):
        print(f"  {key:<{width}}  {_show(results[key])}")
    print(f"wrote {path}")
    return results
