"""Results at a glance, environment and time from manifests, bench figures: generated, never typed."""
import json
import math

from snaptax import article, profiles, seeds
from snaptax.claims import Claim, Outcome
from snaptax.record import Manifest
from snaptax.values import Value

SEEDS = (
    seeds.Seed("000", "a", "measured a", ("alpha", "planned"), ("alpha.x",), models=(seeds.Model("chain", "c"),)),
    seeds.Seed("001", "b", "measured b", ("beta",), published="half", where="Table 9",
               models=(seeds.Model("no_such_model", "n"),)),
)


def outcome(cid, cite, value, low, high, published=2.0, n=3):
    c = Claim(cid, cite, "Table 2", "what", published, "×", 1.0, 0.2, "basis", f"{cid}.v", "stand-in")
    return Outcome(c, Value(f"{cid}.v", value, "×", low, high, n, 2))


def test_rows_fill_from_claims_and_say_what_is_not_measured():
    outs = [outcome("alpha.y", "a", 1.5, 1.4, 1.6), outcome("alpha.x", "a", 1.9, 1.85, 1.95)]
    rows = article.glance_rows(outs, ["alpha"], SEEDS)
    assert rows[0].headline is outs[1]                      # the named headline claim, not the first
    assert rows[0].measured == ("alpha",) and rows[0].missing == ("planned",)
    assert article.verdict_cell(rows[0]) == "agrees (all 2 claims: 1 agrees, 1 same direction); planned: " \
        "not yet measured"
    assert rows[1].headline is None and not rows[1].reproduced
    assert article.verdict_cell(rows[1]) == "not yet reproduced (beta: not yet measured)"
    tex = article.glance_tex(rows)
    assert "1.90 [1.85, 1.95] ×" in tex and "\\cite{a}, Table 2" in tex
    assert "half \\cite{b}, Table 9" in tex and "not yet measured" in tex
    assert "\\texttt{chain}" in tex and "none yet" in tex
    vals = {v.key: v for v in article.glance_values(rows)}
    assert vals["paper.seeds.total"].value == 2 and vals["paper.seeds.reproduced"].value == 1
    assert vals["paper.seeds.not_yet_list"].text == "001"
    assert vals["paper.seeds.studies_missing"].text == "beta and planned"
    assert vals["paper.seeds.coverage"].text == ("1 have at least one claim tested in this build; seeds 001 are not "
                                                 "yet reproduced (their studies, beta and planned, are not part of "
                                                 "this build)")


def test_coverage_of_a_build_with_every_study_says_so():
    rows = article.glance_rows([outcome("alpha.x", "a", 1.9, 1.85, 1.95), outcome("beta.z", "b", 3.0, 2.9, 3.1)],
                               ["alpha", "planned", "beta"], SEEDS)
    vals = {v.key: v for v in article.glance_values(rows)}
    assert vals["paper.seeds.coverage"].text == "every one has at least one claim tested in this build"
    assert "none" not in vals["paper.seeds.coverage"].text


def test_a_study_that_lands_fills_its_row():
    rows = article.glance_rows([outcome("beta.z", "b", 3.0, 2.9, 3.1)], ["alpha", "beta"], SEEDS)
    assert rows[1].reproduced and rows[1].missing == ()
    assert article.verdict_cell(rows[1]) == "same direction"   # 3.0 against 2 ± 0.2, beyond 1 ± 0.2


def test_join_words():
    assert article.join_words([]) == "" and article.join_words(["a"]) == "a"
    assert article.join_words(["a", "b", "c"]) == "a, b and c"


def manifest(study, start, end, planned_s=600.0, fio="fio-3.33", cpus=2):
    prov = {"host": {"cpu": "Test CPU", "cpus": cpus, "mem_kib": 2 * 2**20, "kernel": "6.1", "machine": "x86_64"},
            "tools": {"fio": fio, "qemu-storage-daemon": "qemu-storage-daemon version 7.2.22 (Debian 1:7.2)",
                      "nbdkit": "nbdkit 1.32.5", "python": "3.11.7"}}
    return Manifest(2, study, "20260101T000000Z-quick", profiles.get("quick"), "t", "embedded", "t.yaml", False,
                    (), (), {}, {}, (), prov, start, end, 10, 10, planned_s)


def test_environment_and_time_from_manifests():
    ms = {"alpha": manifest("alpha", "2026-01-01T00:00:00.0Z", "2026-01-01T00:12:30.0Z"),
          "beta": manifest("beta", "2026-01-01T01:00:00.0Z", "2026-01-01T01:06:00.0Z", planned_s=0, fio="fio-3.35")}
    vals = {v.key: v for v in article.environment_values(ms)}
    assert vals["paper.env.cpus"].text == "2" and vals["paper.env.mem_gib"].text == "2.0"
    assert vals["paper.env.qemu"].text == "7.2.22" and vals["paper.env.fio"].text == "3.33; 3.35"
    assert vals["paper.time.alpha"].value == 12.5 and vals["paper.time.total"].value == 18.5
    assert vals["paper.planned.alpha"].value == 10.0 and math.isnan(vals["paper.planned.beta"].value)
    tex = article.artifact_tex(ms, {"alpha": "01_alpha.ipynb"})
    assert "12.5" in tex and "01\\_alpha.ipynb" in tex and "--" in tex and "20260101T000000Z-quick" in tex


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
