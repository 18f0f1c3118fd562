"""Every registered study's four modules typed by the contract (studies.contract), so that mypy checks each study
against it: its plan and measure against PlanModule and MeasureModule (and, for a study measured in parts, its plan
against PartedPlanModule), and that its present takes the Analysis its analyse returns.
tests/studies/test_registry.py keeps MODULES and REGISTRY the same studies.

Importing this module imports every study's modules (altair with the present ones); Study itself imports a study's
modules only when it is used.
"""
from __future__ import annotations

from .calibration import (
    analyse as calibration_analyse,
    measure as calibration_measure,
    plan as calibration_plan,
    present as calibration_present,
)
from .chain_bulk import (
    analyse as chain_bulk_analyse,
    measure as chain_bulk_measure,
    plan as chain_bulk_plan,
    present as chain_bulk_present,
)
from .chain_length import (
    analyse as chain_length_analyse,
    measure as chain_length_measure,
    plan as chain_length_plan,
    present as chain_length_present,
)
from .contract import Modules, PartedPlanModule
from .db_snapshots import (
    analyse as db_snapshots_analyse,
    measure as db_snapshots_measure,
    plan as db_snapshots_plan,
    present as db_snapshots_present,
)
from .engines import (
    analyse as engines_analyse,
    measure as engines_measure,
    plan as engines_plan,
    present as engines_present,
)
from .lifecycle import (
    analyse as lifecycle_analyse,
    measure as lifecycle_measure,
    plan as lifecycle_plan,
    present as lifecycle_present,
)
from .memory_dump import (
    analyse as memory_dump_analyse,
    measure as memory_dump_measure,
    plan as memory_dump_plan,
    present as memory_dump_present,
)
from .metadata_cache import (
    analyse as metadata_cache_analyse,
    measure as metadata_cache_measure,
    plan as metadata_cache_plan,
    present as metadata_cache_present,
)
from .tiering import (
    analyse as tiering_analyse,
    measure as tiering_measure,
    plan as tiering_plan,
    present as tiering_present,
)

# Not annotated: under a declared Modules[Any], mypy would take A from the declaration instead of inferring it from
# each study's analyse, and a present that takes another study's Analysis would pass.
MODULES = {
    "chain_length": Modules(chain_length_plan, chain_length_measure, chain_length_analyse, chain_length_present),
    "calibration": Modules(calibration_plan, calibration_measure, calibration_analyse, calibration_present),
    "engines": Modules(engines_plan, engines_measure, engines_analyse, engines_present),
    "memory_dump": Modules(memory_dump_plan, memory_dump_measure, memory_dump_analyse, memory_dump_present),
    "lifecycle": Modules(lifecycle_plan, lifecycle_measure, lifecycle_analyse, lifecycle_present),
    "metadata_cache": Modules(metadata_cache_plan, metadata_cache_measure, metadata_cache_analyse,
                              metadata_cache_present),
    "chain_bulk": Modules(chain_bulk_plan, chain_bulk_measure, chain_bulk_analyse, chain_bulk_present),
    "tiering": Modules(tiering_plan, tiering_measure, tiering_analyse, tiering_present),
    "db_snapshots": Modules(db_snapshots_plan, db_snapshots_measure, db_snapshots_analyse, db_snapshots_present),
}
# The studies that may be measured in parts (issue 49.1), their plans typed as such (a test keeps these the studies
# whose plan has parts).
PARTED: dict[str, PartedPlanModule] = {"chain_length": chain_length_plan, "chain_bulk": chain_bulk_plan,
                                        "memory_dump": memory_dump_plan}

__all__ = ["MODULES", "PARTED"]
