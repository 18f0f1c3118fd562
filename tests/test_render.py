"""What render gathers from data/ for the paper, beyond each study's own analysis."""
from snaptax import article, compare, profiles, render, studies
from snaptax.record import RunWriter
from tests.synthetic import rig


def publish(tmp, study, run_id, planned_s):
    profile = run_id.rsplit("-", 1)[1]
    w = RunWriter(rig(tmp), study, profiles.get(profile), {}, tmp / "staging" / run_id, planned_seconds=planned_s,
                  run_id=run_id)
    return w.publish(tmp / "data" / "t" / study / run_id)


def test_study_times_take_each_profiles_newest_runs_and_the_plans_predictions(tmp_path, data_dir):
    planned = studies.get("chain_length").planned_seconds(profiles.get("quick"))
    for run_id in ("20260101T000000Z-quick", "20260102T000000Z-quick", "20260103T000000Z-quick",
                   "20260104T000000Z-smoke"):
        publish(tmp_path, "chain_length", run_id, planned)
    times = {t.study: t for t in render.study_times("t")}
    assert list(times) == [s.id for s in studies.REGISTRY]
    chain = times["chain_length"]
    assert [m.run_id for m in chain.runs["quick"]] == ["20260102T000000Z-quick", "20260103T000000Z-quick"]
    assert [m.run_id for m in chain.runs["smoke"]] == ["20260104T000000Z-smoke"]
    assert chain.planned_s == {p: studies.get("chain_length").planned_seconds(profiles.get(p))
                               for p in ("smoke", "quick", "full")}
    assert chain.ratio_runs() == list(chain.runs["quick"])
    assert not any(t.runs["quick"] or t.runs["smoke"] for s, t in times.items() if s != "chain_length")
    assert times["engines"].why_not_extrapolated() == studies.get("engines").no_planned_time()
    assert len(chain.runs["quick"]) == article.RUNS_SHOWN


def test_the_reruns_table_names_each_runs_commit_and_host_and_counts_pairs_on_one_host(tmp_path, monkeypatch):
    from snaptax import provenance
    from snaptax.record import RunRecord
    manifests = {}
    xeon = "Intel(R) Xeon(R) Processor"
    for run_id, cpu in (("20260101T000000Z-quick", "AMD EPYC"), ("20260102T000000Z-quick", xeon),
                        ("20260103T000000Z-quick", xeon)):
        monkeypatch.setattr(provenance, "collect", lambda cpu=cpu: {"git": {"commit": "c" * 40, "dirty": True},
                                                                    "host": {"cpu": cpu}})
        manifests[run_id] = RunRecord.load(publish(tmp_path, "chain_length", run_id, 1.0)).manifest
    across = compare.RunComparison("a", "20260101T000000Z-quick", "20260102T000000Z-quick", (), ())
    alike = compare.RunComparison("b", "20260102T000000Z-quick", "20260103T000000Z-quick", (), ())
    values = {v.key: v for v in render.repro_values([across, alike], manifests)}
    assert values["paper.repro.same_host"].value == 1 and values["paper.repro.studies"].value == 2
    assert values["paper.repro.hosts"].text.startswith("1 of the 2 pairs ran both runs on one host model; the others")
    alone = {v.key: v for v in render.repro_values([alike], manifests)}
    assert alone["paper.repro.hosts"].text == "all 1 pairs ran both their runs on one host model"
    assert not render.same_host(alike, {})        # an unrecorded host is never the same
    table = render.repro_tex([across], manifests)
    assert "(cccccccccc+; AMD EPYC)" in table and "(cccccccccc+; Intel Xeon)" in table
