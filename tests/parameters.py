"""Checks every study's parameters record shares (studyparams.StudyParameters): the JSON the manifest stores reads
back as the same record, a missing key is one ConfigError naming it, and every committed run's parameters load."""
import json

import pytest

from snaptax.errors import ConfigError
from snaptax.record import RunRecord, published_runs
from snaptax.studyparams import StudyParameters

SOURCE = "data/local/x/run/manifest.json (parameters)"


def manifest_json(p: StudyParameters) -> dict:
    """The parameters as a run's manifest holds them once written and read back (lists, not tuples)."""
    return json.loads(json.dumps(p.to_json(), sort_keys=True))


def assert_round_trip(p: StudyParameters) -> None:
    d = manifest_json(p)
    back = type(p).from_json(d, SOURCE)
    assert back == p
    assert manifest_json(back) == d


def assert_missing_is_named(p: StudyParameters, path: str) -> None:
    """Without the key at `path` (dotted for a nested record) from_json raises one line naming the field."""
    d = manifest_json(p)
    *outer, key = path.split(".")
    inner = d
    for name in outer:
        inner = inner[name]
    del inner[key]
    with pytest.raises(ConfigError) as err:
        type(p).from_json(d, SOURCE)
    assert str(err.value) == f"{SOURCE}: field '{path}': missing"
    assert err.value.field == path


def committed_parameters(monkeypatch, study: str, kind: type[StudyParameters]) -> dict[str, StudyParameters]:
    """Every committed run of `study` (the checkout's data/, even inside make test) read as `kind`, by run id."""
    monkeypatch.delenv("SNAPTAX_DATA_DIR", raising=False)
    runs = published_runs("local", study)
    assert runs, f"{study}: no committed run"
    return {run.name: RunRecord.load(run).parameters(kind) for run in runs}
