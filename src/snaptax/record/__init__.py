"""Run records: everything one study run measured, written so that data/ never holds half a run, and read back
through one typed, versioned reader (RunRecord.load), which upgrades older formats on load.

    schema.py    the format: file names, columns, Manifest and Measurement (format version 5)
    upgrade.py   older formats, upgraded to the current one on load (the one place that knows them)
    writer.py    RunWriter / RunSession: staged, published with one rename, never written again
    reader.py    RunRecord (the only reader of a run) and published_runs
    parts.py     a study measured in parts: a complete set of part runs read as one record (CombinedRecord), and
                 what can be read of a study (readable_runs: whole runs and complete sets; load_run)
    lateness.py  whether an emulated measurement kept time
"""
from __future__ import annotations

from .lateness import (
                       LATENESS_LIMIT,
                       STEAL_NOTABLE,
                       emulator_lateness_s,
                       lateness_fraction,
                       service_time_s,
                       steal_fraction,
)
from .parts import (
                       CombinedRecord,
                       IncompleteSet,
                       PartSet,
                       RunRef,
                       incomplete_sets,
                       load_run,
                       readable_runs,
                       short_run_id,
)
from .reader import RunRecord, published_runs
from .schema import (
                       COUNTERS,
                       EMULATOR_VERSIONS,
                       ENGINE_LOGS,
                       FIO_COLUMNS,
                       KEYS,
                       MANIFEST,
                       MEASUREMENT,
                       MEASUREMENTS,
                       RECORD_FORMAT,
                       RECORD_VERSION,
                       RESULTS,
                       Manifest,
                       Measurement,
                       RecordError,
                       RunPart,
                       slug,
)
from .upgrade import upgrade
from .writer import (
                       ALLOW_DIRTY_ENV,
                       RunSession,
                       RunWriter,
                       UncommittedCode,
                       dirty_allowed,
                       machine_counters,
                       require_committed_code,
                       run_id_now,
                       write_atomic,
                       write_json,
)

__all__ = ["LATENESS_LIMIT", "STEAL_NOTABLE", "emulator_lateness_s", "lateness_fraction", "service_time_s",
           "steal_fraction", "RunRecord", "published_runs", "CombinedRecord", "IncompleteSet", "PartSet", "RunRef",
           "incomplete_sets", "load_run", "readable_runs", "short_run_id", "COUNTERS", "EMULATOR_VERSIONS",
           "ENGINE_LOGS", "FIO_COLUMNS", "KEYS", "MANIFEST", "MEASUREMENT", "MEASUREMENTS", "RECORD_FORMAT",
           "RECORD_VERSION", "RESULTS", "Manifest", "Measurement", "RecordError", "RunPart", "slug", "upgrade",
           "ALLOW_DIRTY_ENV", "RunSession", "RunWriter", "UncommittedCode", "dirty_allowed", "machine_counters",
           "require_committed_code", "run_id_now", "write_atomic", "write_json"]
