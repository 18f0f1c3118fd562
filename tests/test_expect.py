"""expect: what measuring a study will take, in one form for every study (minutes from the newest run of its profile,
else from its plan, saying which; disk; root), and the plan command's table."""
import json
import math

import pytest

from snaptax import expect, profiles, studies
from snaptax.plan import DiskNeed
from snaptax.record import RunWriter
from tests.synthetic import rig

QUICK = profiles.get("quick")


def publish(tmp, study: str, run_id: str, minutes: float):
    """A published run of `study` that took `minutes` from its start to its publication."""
    profile = run_id.rsplit("-", 1)[1]
    w = RunWriter(rig(tmp), study, profiles.get(profile), {}, tmp / "staging" / run_id, run_id=run_id)
    run = w.publish(tmp / "data" / "t" / study / run_id)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["started_utc"], manifest["finished_utc"] = "2026-01-01T00:00:00Z", f"2026-01-01T00:{minutes:02.0f}:00Z"
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_minutes_from_the_newest_run_of_the_profile(tmp_path, data_dir):
    publish(tmp_path, "tiering", "20260101T000000Z-quick", 20)
    publish(tmp_path, "tiering", "20260102T000000Z-quick", 14)
    publish(tmp_path, "tiering", "20260103T000000Z-smoke", 2)
    e = expect.expect(studies.get("tiering"), "t", QUICK)
    assert (e.minutes, e.basis) == (14.0, "measured: newest quick run 20260102T000000Z-quick")
    assert e.disk == studies.get("tiering").disk(QUICK) and e.needs_root


def test_without_a_run_the_plans_prediction_and_it_says_so(data_dir):
    study = studies.get("tiering")
    e = expect.expect(study, "t", QUICK)
    assert e.minutes == pytest.approx(study.planned_seconds(QUICK) / 60)
    assert e.basis == "plan's prediction: no quick run on rig t"


def test_without_a_run_or_a_prediction_it_says_why(data_dir):
    e = expect.expect(studies.get("engines"), "t", QUICK)
    assert math.isnan(e.minutes) and e.minutes_text() == "? min"
    assert e.basis == f"no quick run on rig t, and {studies.get('engines').no_planned_time()}"


def test_the_table_has_one_line_per_study_in_one_form_and_the_total():
    rows = [expect.Expectation("chain_length", "quick", 13.4, "measured: newest quick run r1", DiskNeed(5), True),
            expect.Expectation("engines", "quick", math.nan, "no quick run", DiskNeed(None), True),
            expect.Expectation("tiering", "quick", 9.3, "plan's prediction", DiskNeed(1, bound=True), False)]
    lines = expect.table(rows)
    assert lines == [
        "study           expect  disk while running  root to measure  expected minutes from",
        "chain_length  13.4 min  ~5 GiB              needed           measured: newest quick run r1",
        "engines          ? min  not known           needed           no quick run",
        "tiering        9.3 min  <=1 GiB             not needed       plan's prediction",
        "total at least 22.7 min of measuring (engines not known)",
    ]
    assert expect.table(rows[:1]) == lines[:2]                                         # one study: no total


@pytest.mark.parametrize("study", studies.REGISTRY, ids=lambda s: s.id)
def test_every_study_states_its_disk_at_every_profile(study):
    need = {p: study.disk(profiles.get(p)) for p in profiles.PROFILES}
    assert need["quick"].gib and not need["quick"].bound
    assert need["smoke"] == DiskNeed(need["quick"].gib, bound=True)
    assert need["full"].gib is None or need["full"].gib >= need["quick"].gib
    assert str(need["quick"]).endswith(" GiB")


def test_power_per_claim_from_the_newest_runs_spread_and_what_it_costs(tmp_path, data_dir, monkeypatch):
    """`snaptax plan STUDY`: one line per claim with the replicates for 80 % power, from the spread between
    independent replicates in the newest run, and the minutes they cost at that run's time per replicate; without a
    run, one line saying so."""
    import types

    from snaptax import claims, derived, inference as inf
    from snaptax.values import Value

    study = studies.get("tiering")
    assert expect.power_lines(study, "t", QUICK) == ["power: no published run of tiering on rig t to measure a "
                                                     "spread from"]
    publish(tmp_path, "tiering", "20260101T000000Z-quick", 12)
    # ids the committed registration lists (each claim is planned at its registered tolerance: ±5 pp here)
    c = claims.Claim("tiering.C002-1b", "k", "w", "s", 65.0, "%", 0.0, 5.0, "b", "t.v", "s")
    spread = claims.Outcome(c, Value.of_estimate("t.v", inf.mean_estimate([60.0, 65.0, 70.0], True), "%", 1))
    alone = claims.Outcome(claims.Claim("tiering.C002-1c", "k", "w", "s", 65.0, "%", 0.0, 5.0, "b", "t.w", "s"),
                           Value("t.w", 64.0, "%", 60.0, 68.0, 1))
    monkeypatch.setattr(derived, "values_of", lambda run: types.SimpleNamespace(
        study="tiering", values={}, claims=[spread.to_json(), alone.to_json()]))
    lines = expect.power_lines(study, "t", profiles.get("full"))   # no full run: the quick run's spread
    assert "20260101T000000Z-quick" in lines[0]
    needed = int(lines[1].split(": ")[1].split()[0])
    assert needed > 3 and lines[1].endswith(f"≈{12 * needed / 3:.0f} min of measuring at that run's time per replicate")
    assert lines[2] == "  tiering.C002-1c: no spread between independent replicates measured yet"
