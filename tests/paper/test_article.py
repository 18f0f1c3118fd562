"""Results at a glance, environment and time from manifests, bench figures: generated, never typed."""
import json
import math
from datetime import UTC, datetime, timedelta

import pytest

from snaptax import profiles, seeds
from snaptax.claims import Claim, Outcome
from snaptax.paper import article
from snaptax.record import Manifest
from tests.synthetic import judged

SEEDS = (
    seeds.Seed("000", "a", "measured a", ("alpha", "planned"), ("alpha.x",), models=(seeds.Model("chain", "c"),)),
    seeds.Seed("001", "b", "measured b", ("beta",), published="half", where="Table 9",
               models=(seeds.Model("no_such_model", "n"),)),
)


def outcome(cid, cite, value, low, high, published=2.0, n=3, label="C000-1", basis="measured", provisional=""):
    c = Claim(cid, cite, "Table 2", "what", published, "×", 1.0, 0.2, "basis", f"{cid}.v", "stand-in", label=label,
              basis=basis, provisional=provisional)
    return Outcome(c, judged(f"{cid}.v", value, low, high, n, "×", 2))


def test_rows_fill_from_claims_and_say_what_is_not_measured():
    outs = [outcome("alpha.y", "a", 1.5, 1.4, 1.6), outcome("alpha.x", "a", 1.9, 1.85, 1.95)]
    rows = article.glance_rows(outs, ["alpha"], SEEDS)
    assert rows[0].headline is outs[1]                      # the named headline claim, not the first
    assert rows[0].measured == ("alpha",) and rows[0].missing == ("planned",)
    assert article.ours_cell(rows[0]) == "1.90 [1.85, 1.95] × (agrees); planned: not yet measured"
    assert rows[1].headline is None and not rows[1].tested
    assert article.ours_cell(rows[1]) == "not yet tested (beta: not yet measured)"
    tex = article.glance_tex(rows)
    assert "1.90 [1.85, 1.95] × (agrees)" in tex and "C000-1, 2.00 ×: what \\cite{a}, Table 2" in tex
    assert "half \\cite{b}, Table 9" in tex and "not yet measured" in tex
    assert "\\texttt{chain}" in tex and "none yet" in tex
    vals = {v.key: v for v in article.glance_values(rows)}
    assert vals["paper.seeds.total"].value == 2 and vals["paper.seeds.tested"].value == 1
    assert vals["paper.seeds.not_yet_list"].text == "001"
    assert vals["paper.seeds.studies_missing"].text == "beta and planned"
    assert vals["paper.seeds.coverage"].text == ("1 have at least one claim tested in this build; seeds 001 are not "
                                                 "yet tested (their studies, beta and planned, are not part of "
                                                 "this build)")


def test_coverage_of_a_build_with_every_study_says_so():
    rows = article.glance_rows([outcome("alpha.x", "a", 1.9, 1.85, 1.95), outcome("beta.z", "b", 3.0, 2.9, 3.1)],
                               ["alpha", "planned", "beta"], SEEDS)
    vals = {v.key: v for v in article.glance_values(rows)}
    assert vals["paper.seeds.coverage"].text == "every one has at least one claim tested in this build"
    assert "none" not in vals["paper.seeds.coverage"].text


def test_a_study_that_lands_fills_its_row():
    rows = article.glance_rows([outcome("beta.z", "b", 3.0, 2.9, 3.1)], ["alpha", "beta"], SEEDS)
    assert rows[1].tested and rows[1].missing == ()
    assert article.ours_cell(rows[1]) == "3.00 [2.90, 3.10] × (differs)"   # wholly beyond 2 ± 0.2


def test_each_seed_row_counts_all_its_claim_rows_by_verdict_its_model_checks_and_provisional_rows():
    outs = [outcome("alpha.x", "a", 1.9, 1.85, 1.95, basis="model"),        # agrees, a model check
            outcome("alpha.y", "a", 1.0, 0.95, 1.05, label="C000-2"),       # differs
            outcome("alpha.z", "a", 1.1, 1.05, 1.15, label="C000-2", provisional="why"),   # differs, provisional
            outcome("alpha.w", "a", 3.0, 2.9, 3.1, label="C000-3")]         # differs (beyond 2 ± 0.2)
    row = article.glance_rows(outs, ["alpha", "planned"], SEEDS)[0]
    # the named headline is a model check: a measured row heads the seed instead
    assert row.headline is outs[1] and not row.headline.claim.is_model
    assert row.counts == {"agrees": 1, "differs": 3, "inconclusive": 0, "not judged": 0, "calibration": 0}
    assert row.model_rows == 1 and row.provisional_rows == 1 and row.seed_claims == 3
    line = next(x for x in article.glance_tex([row]).splitlines() if x.startswith("000 &"))
    cells = line.removesuffix(" \\\\").split(" & ")
    assert cells[4:12] == ["4 (3)", "1", "3", "0", "0", "0", "1", "1"]
    assert len(cells) == len(article.GLANCE_HEADER)
    # a seed whose only tested headline is a model check shows it, marked; a provisional headline says so
    only = article.glance_rows([outs[0]], ["alpha", "planned"], SEEDS)[0]
    assert article.ours_cell(only) == "1.90 [1.85, 1.95] × (model; agrees)"
    provisional = article.glance_rows([outs[2]], ["alpha", "planned"], SEEDS)[0]
    assert article.ours_cell(provisional) == "1.10 [1.05, 1.15] × (differs; provisional)"
    # a seed without a claim row has no counts
    untested = article.glance_rows([], ["alpha"], SEEDS)[1]
    line = next(x for x in article.glance_tex([untested]).splitlines() if x.startswith("001 &"))
    assert line.split(" & ")[4:11] == ["--"] * 7


def test_join_words():
    assert article.join_words([]) == "" and article.join_words(["a"]) == "a"
    assert article.join_words(["a", "b", "c"]) == "a, b and c"


def manifest(study, start, end, planned_s=600.0, fio="fio-3.33", cpus=2, profile="quick"):
    prov = {"host": {"cpu": "Test CPU", "cpus": cpus, "mem_kib": 2 * 2**20, "kernel": "6.1", "machine": "x86_64"},
            "tools": {"fio": fio, "qemu-storage-daemon": "qemu-storage-daemon version 7.2.22 (Debian 1:7.2)",
                      "nbdkit": "nbdkit 1.32.5", "python": "3.11.7"}}
    return Manifest(3, study, f"20260101T000000Z-{profile}", profiles.get(profile), "t", "embedded", "t.yaml", False,
                    (), (), {}, {}, (), prov, start, end, 10, 10, planned_s, 0.0, None, None)


def run(study, minutes, planned_s, profile="quick", hour=0):
    """A run of `study` that took `minutes` from start to publication and whose plan predicted `planned_s`."""
    start = datetime(2026, 1, 1, hour, tzinfo=UTC)
    end = start + timedelta(minutes=minutes)
    return manifest(study, start.isoformat().replace("+00:00", "Z"), end.isoformat().replace("+00:00", "Z"),
                    planned_s, profile=profile)


def test_environment_and_time_from_manifests():
    ms = {"alpha": manifest("alpha", "2026-01-01T00:00:00.0Z", "2026-01-01T00:12:30.0Z"),
          "beta": manifest("beta", "2026-01-01T01:00:00.0Z", "2026-01-01T01:06:00.0Z", planned_s=0, fio="fio-3.35")}
    vals = {v.key: v for v in article.environment_values(ms)}
    assert vals["paper.env.cpus"].text == "2" and vals["paper.env.mem_gib"].text == "2.0"
    assert vals["paper.env.qemu"].text == "7.2.22" and vals["paper.env.fio"].text == "3.33; 3.35"
    assert vals["paper.time.alpha"].value == 12.5 and vals["paper.time.total"].value == 18.5
    assert vals["paper.planned.alpha"].value == 10.0 and math.isnan(vals["paper.planned.beta"].value)


def test_short_version():
    assert article.short_version("fio-3.33") == "3.33"
    assert article.short_version(None) == "?" and article.short_version("odd") == "odd"


def test_bench_values(tmp_path):
    assert article.bench_values(tmp_path / "missing.json") == []
    p = tmp_path / "latest.json"
    p.write_text(json.dumps({"harness_nbd_over_direct": 0.49, "harness_rounds": 5, "cofw_engine_iops_median": None,
                             "meta_commit": "0123456789abcdef", "meta_date_utc": "2026-01-02T03:04:05Z"}))
    vals = {v.key: v for v in article.bench_values(p)}
    assert vals["paper.bench.nbd_over_direct_pct"].value == 49.0
    assert "paper.bench.cofw_iops" not in vals
    assert vals["paper.bench.provenance"].text == "commit 0123456789, 2026-01-02"
    # groups measured in different runs each name their own
    p.write_text(json.dumps({"meta_commit": "0123456789abcdef", "meta_date_utc": "2026-01-03T00:00:00Z",
                             "meta_spindle_commit": "fedcba9876543210", "meta_spindle_commit_dirty": True,
                             "meta_spindle_date_utc": "2026-01-03T00:00:00Z", "meta_spindle_cpu_model": "CPU B",
                             "meta_harness_commit": "0123456789abcdef", "meta_harness_date_utc": "2026-01-02T00:00:00Z",
                             "meta_harness_cpu_model": "CPU A"}))
    assert {v.key: v for v in article.bench_values(p)}["paper.bench.provenance"].text == \
        "harness: commit 0123456789, 2026-01-02, CPU A; spindle: commit fedcba9876+, 2026-01-03, CPU B"
    # all groups from one run: said once
    same = {f"meta_{g}_{k}": v for g in ("harness", "spindle") for k, v in
            (("commit", "0123456789abcdef"), ("date_utc", "2026-01-02T00:00:00Z"), ("cpu_model", "CPU A"))}
    p.write_text(json.dumps(same))
    assert {v.key: v for v in article.bench_values(p)}["paper.bench.provenance"].text == \
        "commit 0123456789, 2026-01-02, CPU A"
    assert "paper.bench.seek_fit_goal" not in vals


@pytest.mark.parametrize("worst,clause", [(0.049, "within"), (0.051, "above")])
def test_the_seek_fit_goal_is_judged_on_the_worst_round(tmp_path, worst, clause):
    p = tmp_path / "latest.json"
    p.write_text(json.dumps({"seek_fit_max_rel_error": 0.02, "seek_fit_max_rel_error_max": worst}))
    assert {v.key: v for v in article.bench_values(p)}["paper.bench.seek_fit_goal"].text == clause


@pytest.mark.parametrize("uring,clause", [(0.55, "below"), (0.61, "not below"), (0.70, "not below")])
def test_the_aio_comparison_says_how_io_uring_came_out_against_native(tmp_path, uring, clause):
    p = tmp_path / "latest.json"
    p.write_text(json.dumps({"harness_nbd_over_direct": 0.61, "harness_nbd_io_uring_over_direct": uring}))
    vals = {v.key: v for v in article.bench_values(p)}
    assert vals["paper.bench.io_uring_vs_native"].text == clause
    assert vals["paper.bench.nbd_io_uring_over_direct_pct"].value == pytest.approx(uring * 100)
    p.write_text(json.dumps({"harness_nbd_over_direct": 0.61}))          # a bench from before the comparison
    assert "paper.bench.io_uring_vs_native" not in {v.key for v in article.bench_values(p)}


def times(study, smoke=(), quick=(), planned=(60.0, 600.0, 6000.0), why=article.NO_PLANNED_TIME, full=()):
    """StudyTimes of synthetic runs: smoke, quick and full as (minutes, planned seconds) pairs, oldest first;
    planned: what the plan predicts now at smoke, quick and full (s)."""
    return article.StudyTimes(study, f"0_{study}.ipynb",
                              {"smoke": tuple(run(study, m, p, "smoke", h) for h, (m, p) in enumerate(smoke)),
                               "quick": tuple(run(study, m, p, "quick", h) for h, (m, p) in enumerate(quick)),
                               "full": tuple(run(study, m, p, "full", h) for h, (m, p) in enumerate(full))},
                              dict(zip(("smoke", "quick", "full"), planned, strict=True)), why)


def row(tex, study):
    return next(line for line in tex.splitlines() if line.startswith(f"{study} &"))


def test_full_is_the_full_plans_prediction_times_the_quick_runs_measured_over_planned():
    t = times("alpha", smoke=[(2.0, 60.0)], quick=[(12.0, 600.0), (13.0, 600.0)])
    assert t.ratio() == pytest.approx(25 * 60 / 1200)                 # 1.25 over both quick runs
    assert t.why_not_extrapolated() is None
    assert t.extrapolated() == pytest.approx(6000 / 60 * 1.25)        # 125 min
    assert row(article.artifact_tex([t]), "alpha") == \
        "alpha & \\texttt{0\\_alpha.ipynb} & 2.0 & 12.0, 13.0 & 10.0, 10.0 & 1.25 & 100.0 & 125.0 & " \
        "---\\textsuperscript{a} \\\\"


def test_one_quick_run_and_no_smoke_run_give_one_time_and_an_honest_dash():
    t = times("beta", quick=[(6.0, 300.0)], planned=(30.0, 300.0, 900.0))
    assert t.extrapolated() == pytest.approx(15 * 1.2)
    cells = row(article.artifact_tex([t]), "beta").split(" & ")
    assert cells[2] == "---\\textsuperscript{a}" and cells[3] == "6.0" and cells[5] == "1.20"
    assert cells[7] == "18.0"


def test_a_plan_that_predicts_no_time_is_not_extrapolated_and_says_why():
    t = times("gamma", quick=[(5.6, 0.0), (5.6, 0.0)], planned=(0.0, 0.0, 0.0), why="jobs are counted, not timed")
    assert math.isnan(t.ratio()) and math.isnan(t.extrapolated())
    assert t.why_not_extrapolated() == "jobs are counted, not timed"
    cells = row(article.artifact_tex([t]), "gamma").split(" & ")
    assert cells[3:] == ["5.6, 5.6", "---", "---", "---", "---\\textsuperscript{b}", "---\\textsuperscript{a} \\\\"]


def test_a_quick_run_planned_with_an_earlier_estimate_is_shown_but_left_out_of_the_ratio():
    t = times("delta", quick=[(5.0, 537.2), (5.3, 328.7)], planned=(30.0, 328.7, 2761.0))
    assert [m.planned_seconds for m in t.ratio_runs()] == [328.7]
    assert t.ratio() == pytest.approx(5.3 * 60 / 328.7)
    assert t.extrapolated() == pytest.approx(2761 / 60 * 5.3 * 60 / 328.7)
    assert row(article.artifact_tex([t]), "delta").split(" & ")[4] == "9.0\\textsuperscript{c}, 5.5"
    # every quick run planned by an earlier estimate: no ratio to scale the current full prediction by
    old = times("delta", quick=[(5.0, 537.2)], planned=(30.0, 328.7, 2761.0))
    assert math.isnan(old.extrapolated()) and "earlier estimate" in old.why_not_extrapolated()


def test_a_study_without_quick_runs_has_dashes_and_no_full_time():
    t = times("epsilon", smoke=[(1.0, 60.0)])
    assert t.why_not_extrapolated() == "no quick run is published"
    cells = row(article.artifact_tex([t]), "epsilon").split(" & ")
    assert cells[2] == "1.0" and cells[3] == cells[4] == "---\\textsuperscript{a}"
    assert cells[5] == "---" and cells[6] == "100.0" and cells[7] == "---\\textsuperscript{b}"


def test_totals_per_profile_count_the_newest_run_of_each_study_and_say_how_many_studies():
    ts = [times("alpha", smoke=[(2.0, 60.0), (2.5, 60.0)], quick=[(12.0, 600.0), (13.0, 600.0)]),
          times("beta", quick=[(6.0, 300.0)], planned=(30.0, 300.0, 900.0)),
          times("gamma", quick=[(5.6, 0.0)], planned=(0.0, 0.0, 0.0), why="counted, not timed"),
          times("epsilon")]
    vals = {v.key: v for v in article.time_values(ts)}
    assert vals["paper.time.studies"].value == 4
    assert vals["paper.time.smoke.total"].value == pytest.approx(2.5) and vals["paper.time.smoke.studies"].value == 1
    assert vals["paper.time.quick.total"].value == pytest.approx(13.0 + 6.0 + 5.6)
    assert vals["paper.time.quick.studies"].value == 3
    assert vals["paper.time.full_extrapolated.total"].value == pytest.approx(125.0 + 18.0)
    assert vals["paper.time.full_extrapolated.studies"].value == 2
    assert vals["paper.time.full_extrapolated.alpha"].value == pytest.approx(125.0)
    # each study's time per measured profile too (what the README quotes): the newest run's, nan without one
    assert vals["paper.time.smoke.alpha"].value == pytest.approx(2.5)
    assert math.isnan(vals["paper.time.smoke.gamma"].value)
    # the artifact table's totals print the same values as the prose (and the README) quote
    totals = row(article.artifact_tex(ts), "\\midrule total").split(" & ")
    assert totals[2].startswith(vals["paper.time.smoke.total"].formatted() + " (1 of 4)")
    assert totals[3].startswith(vals["paper.time.quick.total"].formatted() + " (3 of 4)")
    assert totals[7].startswith(vals["paper.time.full_extrapolated.total"].formatted() + " (2 of 4)")
    assert vals["paper.time.quick.total"].formatted() in vals["paper.time.quick.clause"].text
    assert math.isnan(vals["paper.time.full_extrapolated.gamma"].value)
    assert vals["paper.time.smoke.clause"].text == "the newest smoke runs of the 1 of 4 studies that have one took " \
        "2.5 min in all (beta, gamma and epsilon: none yet)"
    assert vals["paper.time.full_extrapolated.clause"].text == \
        "143.0 min (about 2.4 h) in all for the 2 of 4 studies where it can be formed"
    assert vals["paper.time.full_extrapolated.gaps"].text == \
        "gamma: counted, not timed; epsilon: no quick run is published"
    total = next(line for line in article.artifact_tex(ts).splitlines() if "total" in line)
    assert total == "\\midrule total &  & 2.5 (1 of 4) & 24.6 (3 of 4) &  &  &  & 143.0 (2 of 4) & --- \\\\"


def test_the_clauses_read_right_with_every_study_and_with_none():
    vals = {v.key: v for v in article.time_values([times("alpha", smoke=[(2.0, 60.0)], quick=[(12.0, 600.0)])])}
    assert vals["paper.time.smoke.clause"].text == "the newest smoke run of each of the 1 studies took 2.0 min in all"
    assert vals["paper.time.full_extrapolated.clause"].text == "120.0 min (about 2.0 h) in all for all 1 studies"
    assert vals["paper.time.full_extrapolated.gaps"].text == "none"
    vals = {v.key: v for v in article.time_values([times("alpha")])}
    assert vals["paper.time.quick.clause"].text == "no study has a published quick run yet"
    assert vals["paper.time.full_extrapolated.clause"].text == \
        "no study's full time can be extrapolated from the published runs"
    assert math.isnan(vals["paper.time.quick.total"].value) and vals["paper.time.quick.studies"].value == 0


def test_a_measured_full_run_is_shown_beside_the_prediction_it_is_held_against():
    ts = [times("alpha", quick=[(12.0, 600.0)], full=[(131.5, 6000.0)]), times("beta", quick=[(6.0, 300.0)])]
    cells = row(article.artifact_tex(ts), "alpha").split(" & ")
    assert cells[7] == "120.0" and cells[8] == "131.5 \\\\"          # extrapolated 100 min x 1.2; measured
    assert row(article.artifact_tex(ts), "beta").split(" & ")[8] == "---\\textsuperscript{a} \\\\"
    vals = {v.key: v for v in article.time_values(ts)}
    assert vals["paper.time.full.alpha"].value == pytest.approx(131.5)
    assert math.isnan(vals["paper.time.full.beta"].value)
    assert vals["paper.time.full.studies"].value == 1
    assert vals["paper.time.full.clause"].text == \
        "the newest full runs of the 1 of 2 studies that have one took 131.5 min in all (beta: none yet)"
    assert vals["paper.time.full_extrapolated.alpha"].value == pytest.approx(120.0)


@pytest.mark.parametrize("measured,word", [(0.955, "lies"), (0.99, "does not lie"), (0.92, "does not lie")])
def test_the_qd1_accuracy_is_judged_against_its_two_explained_bounds(tmp_path, measured, word):
    p = tmp_path / "latest.json"
    p.write_text(json.dumps({"emulator_accuracy_qd1": measured, "emulator_accuracy_qd1_explained": 0.975,
                             "emulator_accuracy_qd1_explained_idle": 0.935}))
    assert {v.key: v for v in article.bench_values(p)}["paper.bench.qd1_between"].text == word


@pytest.mark.parametrize("multi,clause", [(0.66, "above"), (0.59, "within"), (0.50, "below")])
def test_two_connections_are_judged_against_the_range_of_one_connections_rounds(tmp_path, multi, clause):
    p = tmp_path / "latest.json"
    p.write_text(json.dumps({"harness_nbd_multiconn_over_direct": multi, "harness_nbd_over_direct_min": 0.51,
                             "harness_nbd_over_direct_max": 0.64}))
    text = {v.key: v for v in article.bench_values(p)}["paper.bench.multiconn_vs_one"].text
    assert text == f"{clause} the range of one connection's rounds"
