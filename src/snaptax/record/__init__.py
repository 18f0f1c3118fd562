"""Run records: everything one study run measured, written so that data/ never holds half a run, and read back
through one typed, versioned reader (RunRecord.load), which upgrades older formats on load.

    schema.py    the format: file names, columns, Manifest and Measurement (format version 3)
    upgrade.py   older formats, upgraded to the current one on load (the one place that knows them)
    writer.py    RunWriter / RunSession: staged, published with one rename, never written again
    reader.py    RunRecord (the only reader) and published_runs
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
                       write_atomic,
                       write_json,
)

__all__ = ["LATENESS_LIMIT", "STEAL_NOTABLE", "emulator_lateness_s", "lateness_fraction", "service_time_s",
           "steal_fraction", "RunRecord", "published_runs", "COUNTERS", "EMULATOR_VERSIONS", "ENGINE_LOGS",
           "FIO_COLUMNS", "KEYS", "MANIFEST", "MEASUREMENT", "MEASUREMENTS", "RECORD_FORMAT", "RECORD_VERSION",
           "RESULTS", "Manifest", "Measurement", "RecordError", "slug", "upgrade", "ALLOW_DIRTY_ENV", "RunSession",
           "RunWriter", "UncommittedCode", "dirty_allowed", "machine_counters", "require_committed_code",
           "write_atomic", "write_json"]
