"""What render gathers from data/ for the paper, beyond each study's own analysis."""
import dataclasses

from snaptax import compare, profiles, studies
from snaptax.paper import article, render, repro
from snaptax.record import RunWriter
from tests.synthetic import judged, rig


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
        m = RunRecord.load(publish(tmp_path, "chain_length", run_id, 1.0)).manifest
        # started as the run's id says (a test publishes now)
        manifests[run_id] = dataclasses.replace(m, started_utc=f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}T00:00:00Z")
    across = compare.RunComparison("a", "20260101T000000Z-quick", "20260102T000000Z-quick", (), ())
    alike = compare.RunComparison("b", "20260102T000000Z-quick", "20260103T000000Z-quick", (), ())
    values = {v.key: v for v in repro.repro_values([across, alike], manifests)}
    assert values["paper.repro.same_host"].value == 1 and values["paper.repro.studies"].value == 2
    assert values["paper.repro.hosts"].text.startswith("1 of the 2 pairs ran both runs on one host model; the others")
    alone = {v.key: v for v in repro.repro_values([alike], manifests)}
    assert alone["paper.repro.hosts"].text == "the one pair ran both its runs on one host model"
    # a pair measured on two dates is named with both dates, the hours between its starts and its hosts
    b_days = "b on 2026-01-02 and 2026-01-03 (24 h between their starts; both on one processor model, Intel Xeon)"
    assert values["paper.repro.days"].text == ("a on 2026-01-01 and 2026-01-02 (24 h between their starts; on two "
                                               f"processor models, AMD EPYC and Intel Xeon); {b_days}")
    assert alone["paper.repro.days"].text == b_days
    assert not repro.same_host(alike, {})        # an unrecorded host is never the same
    table = repro.repro_tex([across], manifests)
    assert "(cccccccccc+; AMD EPYC)" in table and "(cccccccccc+; Intel Xeon)" in table


def test_the_first_page_lists_the_runs_measured_from_uncommitted_code(tmp_path, monkeypatch):
    from snaptax import provenance
    from snaptax.record import RunRecord
    manifests = []
    for run_id, dirty in (("20260101T000000Z-quick", False), ("20260102T000000Z-quick", True)):
        monkeypatch.setattr(provenance, "collect", lambda dirty=dirty: {"git": {"commit": "c" * 40, "dirty": dirty},
                                                                        "host": {"cpu": "AMD EPYC"}})
        manifests.append(RunRecord.load(publish(tmp_path, "chain_length", run_id, 1.0)).manifest)
    note = render.dirty_runs_tex(manifests)
    assert "1 of the 2 runs this paper uses" in note and "20260102T000000Z-quick" in note
    assert "20260101T000000Z-quick" not in note and "cccccccccc+" in note
    assert "the one run this paper uses was measured from committed code" in render.dirty_runs_tex(manifests[:1])
    assert "all 2 runs this paper uses were measured from committed code" in render.dirty_runs_tex(
        [manifests[0], dataclasses.replace(manifests[0], run_id="20260103T000000Z-quick")])


def test_a_set_of_part_runs_is_printed_by_its_first_part_wherever_the_paper_names_a_run(tmp_path, monkeypatch):
    """A set's id (its parts' ids joined, 120 characters and more, which TeX cannot break in \\texttt) is printed by
    its first part's start and profile and its count (record.short_run_id), in every table and value naming a run."""
    import dataclasses
    import types
    from fractions import Fraction

    from snaptax import operatingpoints as op, provenance
    from snaptax.record import RunRecord, short_run_id
    from snaptax.studies import seed001_standins, standin_settings
    from snaptax.values import Value

    ids = [f"2026010{k}T000000Z-full-on-disk-metadata.r{k}" for k in range(1, 10)]
    name, short = "+".join(ids), "20260101T000000Z-full (9 parts)"
    assert short_run_id(name) == short and short_run_id(ids[0]) == ids[0]
    assert short_run_id("+".join(ids[:2])) == "20260101T000000Z-full (2 parts)"
    assert short_run_id(f"calibration/{name}") == f"calibration/{short}"
    monkeypatch.setattr(provenance, "collect", lambda: {"git": {"commit": "c" * 40, "dirty": True},
                                                        "host": {"cpu": "AMD EPYC"}})
    m = dataclasses.replace(RunRecord.load(publish(tmp_path, "chain_length", "20260101T000000Z-quick", 1.0)).manifest,
                            run_id=name)
    run = {f"chain_length.run.{k}": Value(f"chain_length.run.{k}", 0.0)
           for k in ("worst_lateness_pct", "flagged", "emulated_measurements")}
    rendered = types.SimpleNamespace(study="chain_length", analysis=types.SimpleNamespace(
        record=types.SimpleNamespace(manifest=m)), derived=types.SimpleNamespace(values=run))
    point = op.OperatingPoint("vmfs_sesparse", 0.5, 0.4, 0.6, f"calibration/{name}", "calibration.reads_double")
    used = op.UsedPoint.of(point, 0.5)
    sources = [*seed001_standins.operating_point_values("chain_bulk", (used,)),
               *standin_settings.operating_point_values("lifecycle", "vmfs_sesparse", Fraction(1, 2), (used,))]
    printed = {"runs": render.runs_tex([rendered]),
               "reruns": repro.repro_tex([compare.RunComparison("chain_length", name, ids[0], (), ())], {name: m}),
               "first page": render.dirty_runs_tex([m]),
               "stand-ins": render.stand_ins_tex({}, None, {"vmfs_sesparse": point}),
               "coverage source": " ".join(v.text for v in sources if v.text and "coverage_source" in v.key)}
    for where, text in printed.items():
        assert short in text and name not in text, where
    assert "(cccccccccc+; AMD EPYC)" in printed["reruns"]


def _outcomes():
    from snaptax.claims import Claim, Outcome

    def row(cid, published, no_effect, tol, value, low, high, text="", **kw):
        c = Claim(cid, "key", "Table 1", "what", published, "%", no_effect, tol, "basis", f"{cid}.v", "stand-in",
                  text, **kw)
        return Outcome(c, judged(f"{cid}.v", value, low, high))
    return [row("t.C001-1", 65.0, 0.0, 15.0, 13.0, 6.5, 19.5),                         # a loss, measured
            row("t.C001-2", 0.0, 0.0, 15.0, 4.0, -8.0, 14.0, "No impact"),              # no published effect
            row("t.C002-2a", 3.7, 100.0, 5.0, 3.8, 3.5, 4.1, basis="model"),            # a model check
            row("t.C004-2a", 70.0, 100.0, 15.0, 95.0, 90.0, 100.0, "lower (no number)",
                provisional="measured before a fix")]


def test_the_claims_table_marks_model_rows_and_gives_the_ratio_of_effects():
    outs = _outcomes()
    table = render.claims_tex(outs)
    assert "Ours ÷ published effect" in table
    lines = [line for line in table.splitlines() if line.startswith("C00")]
    assert len(lines) == 4 and all(line.count(" & ") == 7 for line in lines)
    loss, none, model, provisional = (line.split(" & ") for line in lines)
    assert loss[4] == "0.20\\newline[0.10, 0.30]" and "(model)" not in loss[3]
    assert none[4] == "" and provisional[4] == ""                # no effect published; a direction without a number
    assert model[3] == "3.8\\newline[3.5, 4.1] \\% \\emph{(model)}"
    assert model[4] == "1.00\\newline[1.00, 1.00]"               # (3.8 − 100) / (3.7 − 100), ends swapped
    # the verdict, then the secondary column: whether ours has the published effect's sign (never counted)
    assert provisional[7] == "differs; other sign" + render.PROVISIONAL_MARK + " \\\\"
    assert loss[7] == "differs; same sign \\\\"


def test_the_claims_notes_say_which_rows_are_model_checks_and_which_are_provisional_and_why():
    outs = _outcomes()
    notes = render.claims_notes_tex(outs)
    assert "\\emph{(model)} after our value (C002-2a)" in notes and "not a measurement" in notes
    assert render.PROVISIONAL_MARK + " provisional (C004-2a): measured before a fix" in notes
    assert "\\ref{sec:repro}" in notes
    assert "itemize" not in render.claims_notes_tex(outs[:2])    # nothing to note


def test_the_claim_counts_are_rows_and_distinct_seed_claims_with_model_checks_apart():
    from snaptax.claims import Claim, Outcome
    outs = _outcomes()
    again = Outcome(Claim("t.loss.b", "key", "Table 1", "what", 65.0, "%", 0.0, 15.0, "b", "t.v", "s",
                          label="C001-1"), judged("t.v", 60.0, 55.0, 65.0))
    vals = {v.key: v for v in render.claims_count_values([*outs, again])}
    assert vals["paper.claims.rows"].value == vals["paper.claims.total"].value == 5
    assert vals["paper.claims.seed_claims"].value == 4                       # C001-1 twice
    assert vals["paper.claims.measured.rows"].value == 4 and vals["paper.claims.model.rows"].value == 1
    assert vals["paper.claims.measured.agrees"].value == 2                   # C001-2 and the second C001-1
    assert vals["paper.claims.model.agrees"].value == 1
    assert sum(vals[f"paper.claims.measured.{v}"].value
               for v in ("agrees", "differs", "inconclusive", "not_judged", "calibration")) == 4
    assert vals["paper.claims.measured.clause"].text.startswith("2 agree, 2 differ and 0 are inconclusive")
    assert vals["paper.claims.model.clause"].text == ("1 row (C002-2a) checks a model's prediction, not a "
                                                      "measurement, against the published value (1 agrees)")
    assert vals["paper.claims.provisional.list"].text == "C004-2a"
    assert render.model_clause([]) == "no row checks a model's prediction in place of a measurement"


def test_a_tolerance_of_a_percentage_is_printed_in_percentage_points_in_the_table_and_the_bases():
    from snaptax.claims import VERDICT_RULE, Claim, tolerance_str
    outs = _outcomes()
    lines = [line for line in render.claims_tex(outs).splitlines() if line.startswith("C00")]
    assert all(line.split(" & ")[5] == ("$\\pm$5 pp" if "C002-2a" in line else "$\\pm$15 pp") for line in lines)
    bases = render.tolerance_bases_tex(outs)
    assert "$\\pm$15\\,pp: basis (3 rows)" in bases and "$\\pm$5\\,pp: basis (1 row)" in bases
    assert "\\%:" not in bases and "percentage points, pp" in VERDICT_RULE
    factor = Claim("t.C000-2", "key", "Table 2", "what", 2.0, "×", 1.0, 0.5, "basis", "t.v", "stand-in")
    assert tolerance_str(factor) == "±0.5 ×"


def test_the_provisional_clause_counts_the_measured_rows_that_are_provisional():
    outs = _outcomes()
    vals = {v.key: v for v in render.claims_count_values(outs)}
    assert vals["paper.claims.provisional.clause"].text == "1 of them (C004-2a) is provisional"
    assert render.provisional_clause([]) == "none of them is provisional"
    assert render.provisional_clause([outs[3], outs[3]]) == "2 of them (C004-2a) are provisional"


def test_the_flagged_clause_names_the_studies_whose_claim_rows_come_from_runs_with_flagged_measurements():
    clause = render.flagged_clause([("calibration", 1, 1.0, 73.0), ("tiering", 7, 36.0, 36.0)], 50)
    assert clause == ("the claim rows of the calibration (1 of 73 emulated measurements flagged) and the tiering "
                      "study (36 of 36) come from runs with flagged measurements: 8 of the 50 rows of the claims "
                      "table")
    assert render.flagged_clause([], 50) == "no claim row comes from a run with a flagged measurement"


def test_the_verdicts_clause_says_why_rows_are_not_judged():
    """Fewer than three runs, samples within one run, and the pre-registration are counted apart."""
    import dataclasses

    from snaptax.claims import Claim, Outcome
    from snaptax.values import Value

    c = Claim("s.C000-1a", "zandboer", "Graph 1", "x", 100.0, "%", 100.0, 5.0, "b", "s.v", "stand")
    two = Value("s.v", 90.0, "%", 85.0, 95.0, 2, se=0.02, dof=1, scale="pct_log", independent=True)
    within = Value("s.v", 90.0, "%", 85.0, 95.0, 30)
    rows = [Outcome(c, two), Outcome(c, within), Outcome(c, within),
            Outcome(dataclasses.replace(c, unjudged="not registered"), two)]
    assert render.verdicts_clause(rows) == ("4 are not judged (1 rest on fewer than three independent runs, 2 on "
                                            "samples within one run and 1 by the pre-registration (not registered, "
                                            "registered as not judged, or registered as another quantity))")


def test_the_stand_ins_table_prints_the_point_in_use_before_what_the_newest_sweep_gives():
    from snaptax import operatingpoints as op
    from snaptax.values import Value

    newest = {"calibration.implied.esx35.coverage": Value("calibration.implied.esx35.coverage", 0.02, "", 0.01, 0.03,
                                                          3, 3)}
    in_use = {"esx35_redolog": op.OperatingPoint("esx35_redolog", 0.0, 0.0, 0.0, "calibration/20990101T000000Z-quick",
                                                 "calibration.reads_double")}
    row = next(line for line in render.stand_ins_tex(newest, None, in_use).splitlines() if "ESX 3.5" in line)
    assert "0.000 [0.000, 0.000] from run calibration/20990101T000000Z-quick" in row.replace("\\_", "_")
    row = next(line for line in render.stand_ins_tex(newest, None).splitlines() if "ESX 3.5" in line)
    assert "0.020 [0.010, 0.030]" in row
    assert "not yet inferred" in next(line for line in render.stand_ins_tex({}, None).splitlines() if "ESX 3.5" in line)


def test_a_registered_statement_no_row_tests_is_listed_as_not_tested():
    """Every statement the registration judges or calibrates with and no outcome of the build tests is named in the
    supplement (untested.tex); those registered as not judged are listed elsewhere (unjudged.tex)."""
    from snaptax import registration

    reg = registration.newest()
    judged_ids = [c.id for c in reg.claims.values() if c.role != "unjudged"]
    none_tested = render.untested_tex(reg, [])
    assert none_tested.count("\\item ") == len(judged_ids)
    first = reg.claims[judged_ids[0]]
    assert f"\\item {first.label} (" in none_tested and f"registered as {first.role}" in none_tested
    assert render.untested_tex(None, []).endswith("None.\n")
