#!/usr/bin/env python3
"""Convert format-1 run records under a directory to format 2 (snaptax.record), in place, one run at a time.

    .venv/bin/python tools/migrate_runs_v1.py data/local [more directories or run directories ...]
    .venv/bin/python tools/migrate_runs_v1.py --dry-run data/local     # build and check, change nothing

A run is a directory holding manifest.json. Format-2 runs are left alone; anything else that is not format 1
stops the tool. Each format-1 run <run> is rebuilt in the sibling directory .migrate-<run> (fio files and
engine logs are hard-linked, or copied where links are impossible, never rewritten), checked with
snaptax.record's own readers, and then swapped with <run> by one atomic exchange of the two names
(renameat2 RENAME_EXCHANGE); the old run, now at .migrate-<run>, is then removed. Where the exchange is not
available the swap takes two renames through .migrate-<run>.v1, and a crash between them is repaired by
the next invocation (it finishes the swap). Either way a crash leaves the old run or the new one, never a mix.

What changes (format 1 -> 2):
  manifest.json     + format, format_version, profile (the full Profile dict, moved out of parameters),
                    measured_devices, planned_points / planned_seconds (0: format 1 did not record them),
                    migrated_from; every other field is kept.
  measurement.json  the format-2 record: coordinates, label, bs/iodepth/numjobs, fio summary, counters
                    {source.name: kind, unit, before, after, delta} and the study's extras under "extra".
  results.csv       record.KEYS + record.FIO_COLUMNS + path, the same rows in the same order (the counter
                    columns host_<name> move to counters.csv).
  counters.csv      new: one row per measurement and counter.
Counter names are renamed into the catalogue (snaptax.counters); a name without a mapping stops the tool.
"""
from __future__ import annotations

import argparse
import configparser
import csv
import ctypes
import errno
import json
import os
import re
import shutil
import sys
from pathlib import Path

from snaptax import counters as countermod
from snaptax import provenance, record
from snaptax.fio import parse_size
from snaptax.profiles import Profile

TOOL = "tools/migrate_runs_v1.py"
PREFIX = ".migrate-"
OLD_SUFFIX = ".v1"
MEASUREMENTS = "measurements"
V1_COUNTER_KEYS = ("counters_before", "counters_after", "counters_delta")
V2_MEASUREMENT_KEYS = ("variant", "index", "label", "phase", "job", "rw", "repeat", "chain_length", "bs",
                       "iodepth", "numjobs", "wall_s", "fio", "counters", "extra", "recorded_utc")
COUNTER_COLUMNS = ["variant", "index", "counter", "kind", "unit", "before", "after", "delta"]


class MigrationError(Exception):
    pass


# ====================================================================== counter names

_DISK = {"reads", "writes", "sectors_read", "sectors_written", "io_ms"}
_HOST = {"reads", "writes", "bytes_read", "bytes_written", "rmw_rows", "full_stripe_rows", "promotions",
         "demotions", "migrated_bytes", "tier_cycles"}
_GUEST = {"reads", "writes", "sectors_read", "sectors_written", "io_ms"}
# constants that format 1 recorded as counters; format 2 keeps them out of the counters (the run's variants
# describe them: config.page_size of a cofw variant, config.chunk_size of an lvmthin variant)
DROPPED = {"cofw_page_size", "chunk_sectors"}


def new_counter_name(old: str) -> str | None:
    """The format-2 name of a format-1 counter; None for a dropped constant. Raises for an unmapped name."""
    if old in DROPPED:
        return None
    new: str | None = None
    if m := re.fullmatch(r"disk_(.+)", old):
        new = f"host.{m[1]}" if m[1] in _DISK else None
    elif m := re.fullmatch(r"host_(.+)", old):
        new = f"host.{m[1]}" if m[1] in _HOST else None
    elif m := re.fullmatch(r"member(\d+)_(.+)", old):
        new = f"host.member{m[1]}.{m[2]}"
    elif old in ("member_reads", "member_writes"):
        new = f"host.{old}"
    elif m := re.fullmatch(r"emulator_(.+)", old):
        new = f"emulator.{m[1]}"
    elif old == "qcow2_active_allocated_bytes":
        new = "engine.snapshot_allocated_bytes"
    elif m := re.fullmatch(r"cofw_(.+)", old):
        new = f"engine.{m[1]}"
    elif m := re.fullmatch(r"lv_(.+)", old):
        new = f"guest.{m[1]}" if m[1] in _GUEST else None
    elif m := re.fullmatch(r"pool_(.+)", old):
        new = f"engine.pool_{m[1]}"
    elif old in ("chunks_broken", "live_mapped_sectors"):
        new = f"engine.{old}"
    if new is None:
        raise MigrationError(f"format-1 counter {old!r} has no format-2 mapping")
    try:
        countermod.spec(new)
    except countermod.UnknownCounter:
        raise MigrationError(f"format-1 counter {old!r} maps to {new!r}, which is not in "
                             f"snaptax.counters.CATALOGUE") from None
    return new


# ====================================================================== one measurement

def _job_fio_options(directory: Path, job: str) -> dict[str, str]:
    """bs / iodepth / numjobs as fio reads them from job.fio (the job's section over [global])."""
    parser = configparser.ConfigParser(allow_no_value=True, strict=False, interpolation=None,
                                       comment_prefixes=("#", ";"))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string((directory / "job.fio").read_text())
    out: dict[str, str] = {}
    for section in ("global", job):
        if parser.has_section(section):
            out.update({k: v for k, v in parser.items(section, raw=True) if v is not None})
    return out


def migrate_measurement(d: dict, directory: Path, where: str) -> tuple[dict, list[dict]]:
    """(format-2 measurement.json, counters.csv rows) of one format-1 measurement.json."""
    for key in ("variant", "index", "phase", "job", "rw", "repeat", "chain_length", "wall_s", "fio",
                "recorded_utc", *V1_COUNTER_KEYS):
        if key not in d:
            raise MigrationError(f"{where}: format-1 measurement.json has no {key!r}")
    clash = [k for k in ("counters", "extra", "label") if k in d]
    if clash:
        raise MigrationError(f"{where}: format-1 measurement.json already has key(s) {clash} (not format 1?)")
    shape: dict[str, int] = {}
    missing = [k for k in ("bs", "iodepth", "numjobs") if k not in d]
    opts = _job_fio_options(directory, d["job"]) if missing else {}
    for k in ("bs", "iodepth", "numjobs"):
        if k in d:
            shape[k] = int(d[k])
        elif k in opts:
            shape[k] = parse_size(opts[k], source=str(directory / "job.fio"), field_name=k) if k == "bs" \
                else int(opts[k])
        else:
            raise MigrationError(f"{where}: no {k!r} in measurement.json nor in job.fio")

    before_v1, after_v1 = d["counters_before"], d["counters_after"]
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    for side, src, dst in (("before", before_v1, before), ("after", after_v1, after)):
        for old, value in src.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise MigrationError(f"{where}: counters_{side}[{old!r}] is {value!r}, not a number")
            try:
                new = new_counter_name(old)
            except MigrationError as exc:
                raise MigrationError(f"{where}: {exc}") from None
            if new is None:
                continue
            if new in dst:
                raise MigrationError(f"{where}: two format-1 counters map to {new!r}")
            dst[new] = float(value)
    counted = countermod.over_measurement(before, after)
    # format 1's delta of every counter must be the difference format 2 computes (gauges: v2 has no delta)
    for old, v1_delta in d["counters_delta"].items():
        new = new_counter_name(old)
        if new is None or counted[new].kind != "counter":
            continue
        if not math_close(v1_delta, counted[new].delta):
            raise MigrationError(f"{where}: counters_delta[{old!r}] = {v1_delta} but after - before = "
                                 f"{counted[new].delta}")

    label = f"{d['phase']}-{d['job']}-r{d['repeat']}"
    out = {"variant": d["variant"], "index": d["index"], "label": label, "phase": d["phase"], "job": d["job"],
           "rw": d["rw"], "repeat": d["repeat"], "chain_length": d["chain_length"], **shape,
           "wall_s": d["wall_s"], "fio": d["fio"],
           "counters": {n: c.to_json() for n, c in counted.items()},
           "extra": {k: v for k, v in d.items() if k not in V2_MEASUREMENT_KEYS and k not in V1_COUNTER_KEYS},
           "recorded_utc": d["recorded_utc"]}
    rows = [{"variant": d["variant"], "index": d["index"], "counter": c.name, "kind": c.kind, "unit": c.unit,
             "before": c.before, "after": c.after, "delta": "" if c.delta is None else c.delta}
            for c in counted.values()]
    return out, rows


def math_close(a: float, b: float | None) -> bool:
    return b is not None and abs(float(a) - b) <= 1e-9 * max(1.0, abs(float(a)), abs(b))


# ====================================================================== one run

def migrate_manifest(m: dict, where: Path) -> dict:
    for key in ("study", "run_id", "profile", "rig", "rig_kind", "rig_file", "emulated", "devices", "parameters",
                "variants", "events", "provenance", "started_utc", "finished_utc", "measurements"):
        if key not in m:
            raise MigrationError(f"{where}: format-1 manifest has no {key!r}")
    parameters = dict(m["parameters"])
    profile = parameters.pop("profile", None)
    if not isinstance(profile, dict):
        raise MigrationError(f"{where}: parameters['profile'] is {profile!r}, not the full Profile dict")
    Profile(**profile)  # every field present, no unknown ones
    if profile.get("name") != m["profile"]:
        raise MigrationError(f"{where}: profile {m['profile']!r} but parameters['profile'] is named "
                             f"{profile.get('name')!r}")
    names = [dev["name"] for dev in m["devices"]]
    named = parameters.get("devices") or ([parameters["device"]] if parameters.get("device") else [])
    unknown = [n for n in named if n not in names]
    if unknown:
        raise MigrationError(f"{where}: parameters name device(s) {unknown} that are not among the run's "
                             f"devices {names}")
    measured = [n for n in names if n in named] or names
    out = {**m, "format": record.RECORD_FORMAT, "format_version": record.RECORD_VERSION, "profile": profile,
           "rig_file": str(m["rig_file"]), "measured_devices": measured, "parameters": parameters,
           "planned_points": 0, "planned_seconds": 0.0,
           "migrated_from": {"format_version": 1, "tool": TOOL, "utc": provenance.utc_now(),
                             "note": "planned_points/seconds unknown in format 1; "
                                     "engine.snapshot_allocated_bytes of qcow2 chains longer than 1 counts the "
                                     "newest overlay only (format 1 recorded no other)"}}
    emulated = any(dev.get("emulated") for dev in m["devices"] if dev["name"] in measured)
    if bool(m["emulated"]) != emulated:
        raise MigrationError(f"{where}: emulated={m['emulated']} but the measured devices {measured} say "
                             f"{emulated}")
    return out


def _write_csv(path: Path, columns: list[str], rows: list[dict]) -> None:
    with open(path, "x", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="raise")
        writer.writeheader()
        writer.writerows(rows)
        f.flush()
        os.fsync(f.fileno())


def _link_or_copy(src: Path, dst: Path) -> None:
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
        return
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def build(run: Path, staging: Path) -> dict:
    """Write the format-2 version of format-1 `run` into `staging` (which must not exist). Returns a summary."""
    manifest_v1 = json.loads((run / record.MANIFEST).read_text())
    if (run / record.COUNTERS).exists():
        raise MigrationError(f"{run}: a format-1 run with a {record.COUNTERS}?")
    with open(run / record.RESULTS, newline="") as f:
        reader = csv.DictReader(f)
        v1_columns = list(reader.fieldnames or [])
        v1_rows = list(reader)
    base = [*record.KEYS, *record.FIO_COLUMNS, "path"]
    missing = [c for c in base if c not in v1_columns]
    if missing:
        raise MigrationError(f"{run / record.RESULTS}: no column(s) {missing}")
    counter_columns = [c for c in v1_columns if c not in base]
    for c in counter_columns:
        if not c.startswith("host_"):
            raise MigrationError(f"{run / record.RESULTS}: column {c!r} is neither a coordinate, a fio summary "
                                 f"nor a counter (host_<name>)")
        try:
            new_counter_name(c[len("host_"):])
        except MigrationError as exc:
            raise MigrationError(f"{run / record.RESULTS} column {c!r}: {exc}") from None

    # measurements, in the order results.csv lists them (the order they were recorded)
    order: list[str] = list(dict.fromkeys(r["path"] for r in v1_rows))
    on_disk = sorted(str(p.parent.relative_to(run)) for p in (run / MEASUREMENTS).glob("*/*/" + record.MEASUREMENT))
    if sorted(order) != on_disk:
        raise MigrationError(f"{run}: results.csv names {len(order)} measurements, {len(on_disk)} directories "
                             f"hold a measurement.json (differences: {sorted(set(order) ^ set(on_disk))[:5]})")
    if len(order) != manifest_v1["measurements"]:
        raise MigrationError(f"{run}: manifest says {manifest_v1['measurements']} measurements, results.csv "
                             f"has {len(order)}")

    # the tree: everything but the files rewritten here is linked (or copied) as it is
    rewritten = {Path(record.MANIFEST), Path(record.RESULTS)} | {Path(p) / record.MEASUREMENT for p in order}
    staging.mkdir()
    for dirpath, dirnames, filenames in os.walk(run):
        rel = Path(dirpath).relative_to(run)
        for name in dirnames:
            src = Path(dirpath) / name
            if src.is_symlink():
                _link_or_copy(src, staging / rel / name)
            else:
                (staging / rel / name).mkdir()
        for name in filenames:
            if rel / name not in rewritten:
                _link_or_copy(Path(dirpath) / name, staging / rel / name)

    # measurement.json and counters.csv
    counter_rows: list[dict] = []
    v1_by_path: dict[str, dict] = {}
    stats = {"gauges_differenced": {}, "dropped": {}, "extra_keys": set(), "negative_deltas": {}}
    for rel in order:
        d = json.loads((run / rel / record.MEASUREMENT).read_text())
        v1_by_path[rel] = d
        new, rows = migrate_measurement(d, run / rel, f"{run.name}/{rel}")
        expected = f"{new['index']:03d}-{record._slug(new['label'])}"
        if Path(rel).name != expected or Path(rel).parent.name != record._slug(new["variant"]):
            raise MigrationError(f"{run}/{rel}: directory does not match variant {new['variant']!r}, "
                                 f"index {new['index']} and label {new['label']!r}")
        record.write_json(staging / rel / record.MEASUREMENT, new)
        counter_rows += rows
        stats["extra_keys"] |= set(new["extra"])
        for old in d["counters_after"]:
            n = new_counter_name(old)
            if n is None:
                stats["dropped"][old] = stats["dropped"].get(old, 0) + 1
            elif new["counters"][n]["kind"] == "gauge" and d["counters_delta"].get(old) != d["counters_after"][old]:
                stats["gauges_differenced"][old] = stats["gauges_differenced"].get(old, 0) + 1
            elif new["counters"][n]["delta"] is not None and new["counters"][n]["delta"] < 0:
                stats["negative_deltas"][n] = stats["negative_deltas"].get(n, 0) + 1

    # results.csv: the same rows, coordinates and fio summary only; check them against measurement.json
    rows_v2 = []
    seen: dict[str, int] = {}
    for r in v1_rows:
        d = v1_by_path[r["path"]]
        i = seen.get(r["path"], 0)
        seen[r["path"]] = i + 1
        fio_row = d["fio"][i] if i < len(d["fio"]) else None
        if fio_row is None or fio_row["direction"] != r["direction"] or \
                not math_close(float(r["iops"]), float(fio_row["iops"])) or int(r["ios"]) != int(fio_row["ios"]):
            raise MigrationError(f"{run}/{r['path']}: results.csv row {i} does not match measurement.json's fio")
        for k in record.KEYS:
            if str(d[k]) != r[k]:
                raise MigrationError(f"{run}/{r['path']}: results.csv {k}={r[k]!r}, measurement.json {d[k]!r}")
        for c in counter_columns:
            old = c[len("host_"):]
            if r[c] == "":
                if old in d["counters_delta"]:
                    raise MigrationError(f"{run}/{r['path']}: results.csv {c} is empty, measurement.json has it")
            elif old not in d["counters_delta"] or not math_close(float(r[c]), d["counters_delta"][old]):
                raise MigrationError(f"{run}/{r['path']}: results.csv {c}={r[c]} is not measurement.json's delta")
        rows_v2.append({k: r[k] for k in base})
    for rel, d in v1_by_path.items():
        if seen[rel] != len(d["fio"]):
            raise MigrationError(f"{run}/{rel}: {len(d['fio'])} fio rows, {seen[rel]} rows in results.csv")
    _write_csv(staging / record.RESULTS, base, rows_v2)
    _write_csv(staging / record.COUNTERS, COUNTER_COLUMNS, counter_rows)

    # the manifest last: a staging directory with a format-2 manifest is complete
    record.write_json(staging / record.MANIFEST, migrate_manifest(manifest_v1, run / record.MANIFEST))
    check(staging, len(order))
    return {"measurements": len(order), "results_rows": len(rows_v2), "counter_rows": len(counter_rows),
            "dropped_result_columns": [c for c in counter_columns], **stats}


def check(run: Path, measurements: int) -> None:
    """Read the new run back through snaptax.record's own readers (the parts that need no pandas)."""
    manifest = record.Manifest.from_json(json.loads((run / record.MANIFEST).read_text()), run / record.MANIFEST)
    if manifest.measurements != measurements:
        raise MigrationError(f"{run}: manifest says {manifest.measurements} measurements, not {measurements}")
    with open(run / record.RESULTS, newline="") as f:
        paths = list(dict.fromkeys(r["path"] for r in csv.DictReader(f)))
    for p in paths:
        record.Measurement.load(run / p)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two directory names (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a))


def swap(run: Path, staging: Path) -> None:
    os.sync()  # the new run's files are on disk before its name is
    if _exchange(staging, run):
        _fsync_dir(run.parent)
        shutil.rmtree(staging)  # now the format-1 run
        return
    old = run.with_name(staging.name + OLD_SUFFIX)
    os.rename(run, old)
    os.rename(staging, run)  # a crash in between: recover() finishes the swap
    _fsync_dir(run.parent)
    shutil.rmtree(old)


# ====================================================================== directories

def _format_of(run: Path) -> int | None:
    """2 for a format-2 manifest, 1 for an unversioned one, None without a readable manifest."""
    try:
        m = json.loads((run / record.MANIFEST).read_text())
    except (FileNotFoundError, ValueError):
        return None
    if "format_version" not in m and "format" not in m:
        return 1
    if m.get("format") == record.RECORD_FORMAT and m.get("format_version") == record.RECORD_VERSION:
        return 2
    raise MigrationError(f"{run}: run format {m.get('format')!r} version {m.get('format_version')!r} is neither "
                         f"format 1 nor {record.RECORD_FORMAT} {record.RECORD_VERSION}")


def recover(parent: Path) -> None:
    """Clean up after an interrupted migration in `parent`: finish a half-done two-rename swap, drop stale
    staging directories and left-over format-1 copies. Never removes the only copy of a run."""
    for leftover in sorted(p for p in parent.iterdir() if p.name.startswith(PREFIX) and p.is_dir()):
        name = leftover.name[len(PREFIX):]
        is_old = name.endswith(OLD_SUFFIX)
        run = parent / (name[:-len(OLD_SUFFIX)] if is_old else name)
        staging = parent / (PREFIX + run.name)
        old = parent / (PREFIX + run.name + OLD_SUFFIX)
        if not run.exists():
            if old.exists() and staging.exists() and _format_of(staging) == 2:
                print(f"{run}: finishing an interrupted swap")
                os.rename(staging, run)
                _fsync_dir(parent)
                shutil.rmtree(old)
            elif old.exists() and not staging.exists():
                print(f"{run}: restoring the format-1 run from {old.name}")
                os.rename(old, run)
            else:
                raise MigrationError(f"{leftover}: left by an interrupted migration and {run.name} is missing; "
                                     f"resolve by hand")
        elif leftover.exists():
            # <run> exists: the leftover is a partial build, or the format-1 run after the swap
            print(f"{run}: removing {leftover.name} (left by an interrupted migration)")
            shutil.rmtree(leftover)


def find_runs(root: Path) -> tuple[list[Path], list[Path]]:
    """(runs under root, the directories searched for them: where interrupted migrations leave siblings)."""
    if (root / record.MANIFEST).is_file():
        return [root], [root.parent]
    if not root.is_dir():
        raise MigrationError(f"{root}: not a directory")
    runs: list[Path] = []
    searched: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))
        if record.MANIFEST in filenames and Path(dirpath) != root:
            runs.append(Path(dirpath))
            dirnames[:] = []
        else:
            searched.append(Path(dirpath))
    return runs, searched


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="+", type=Path, help="directories holding runs (searched), or runs")
    ap.add_argument("--dry-run", action="store_true", help="build and check each new run, then discard it")
    args = ap.parse_args(argv)
    try:
        runs: list[Path] = []
        for root in args.roots:
            if not args.dry_run:
                for parent in find_runs(root)[1]:
                    recover(parent)
            runs += find_runs(root)[0]
        for run in runs:
            fmt = _format_of(run)
            if fmt == 2:
                print(f"{run}: already format {record.RECORD_VERSION}, left alone")
                continue
            if fmt is None:
                raise MigrationError(f"{run}: unreadable manifest")
            staging = run.with_name(PREFIX + run.name)
            if staging.exists():
                shutil.rmtree(staging)
            try:
                summary = build(run, staging)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            if args.dry_run:
                shutil.rmtree(staging)
            else:
                swap(run, staging)
            print(f"{run}: {'checked (dry run)' if args.dry_run else 'migrated to format 2'}: "
                  f"{summary['measurements']} measurements, {summary['results_rows']} results rows, "
                  f"{summary['counter_rows']} counter rows")
            if summary["dropped"]:
                print(f"  dropped constants: {summary['dropped']}")
            if summary["gauges_differenced"]:
                print(f"  gauges format 1 differenced (results.csv showed after - before, not the level; "
                      f"format 2 keeps before and after): {summary['gauges_differenced']}")
            if summary["negative_deltas"]:
                print(f"  counters that went down: {summary['negative_deltas']}")
            if summary["extra_keys"]:
                print(f"  measurement extras: {sorted(summary['extra_keys'])}")
    except MigrationError as exc:
        print(f"migrate_runs_v1: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
