"""The tiering study's figures and TeX table, from a synthetic analysis (written into tmp_path only). The study's
analysis tests work on synthetic tables (test_analyse._seconds, _sas_lvmthin); the analysis here is made of the pure
steps analyse() chains (phases_table, fit_model, at_tier_speed, what_if_table, what_if_curves) on such tables: the
SAS pool loses half with the snapshot, the tiered pool follows the misplacement model with τ_ssd = 100 µs and
τ_hdd = 1000 µs, its SSD-served share falling from 1 to 0.1 with the snapshot."""
from fractions import Fraction

import pandas as pd
import pytest

from snaptax.models import tiering as tm
from snaptax.studies.tiering import analyse as an, coverage, misplacement, present, tables
from tests.studies.tiering.test_analyse import _sas_lvmthin, _seconds
from tests.studies.tiering.test_coverage import _sweep

TAU_SSD, TAU_HDD, TAU_SSD_TIER = 100.0, 1000.0, 20.0
SHARES = {"initial": 1.0, "with": 0.1, "delete": 0.1, "after": 0.2}
SAS = {"initial": 1000.0, "with": 500.0, "delete": 300.0, "after": 1000.0}


def synthetic():
    seconds, meas = [], []
    for i, phase in enumerate(SHARES):
        tier = float(tm.iops(SHARES[phase], TAU_SSD, TAU_HDD))
        for pool, iops, share in (("sas_pool", SAS[phase], 0.0), ("tier_pool", tier, SHARES[phase])):
            seconds.append(_seconds(pool, phase, [iops] * 10, t0=20.0 * i).assign(ssd_share=share))
            meas.append({"pool": pool, "phase": phase, "ssd_share": share, "tier_cycles": 0.0, "deletion": None})
    thin_meas, thin_seconds = _sas_lvmthin(0.75)
    seconds = pd.concat([*seconds, thin_seconds.assign(ssd_share=0.0)], ignore_index=True)
    meas = pd.concat([pd.DataFrame(meas), thin_meas], ignore_index=True)
    events = pd.DataFrame({"pool": ["sas_pool", "tier_pool"], "event": "snapshot", "t_s": 20.0, "learned": None,
                           "seconds": float("nan")})
    phases = tables.phases_table(seconds, meas)
    fit = misplacement.fit_model(seconds)
    model_us = {"tier_pool": {"ssd_us_per_io": TAU_SSD_TIER}}
    return an.TieringAnalysis(None, meas=meas, seconds=seconds, phases=phases, events=events, fit=fit,
                              what_if=misplacement.what_if_table(fit, phases, TAU_SSD_TIER, 0.8), model_us=model_us,
                              at_tier_speed=misplacement.at_tier_speed(phases, fit, model_us),
                              what_if_curves=misplacement.what_if_curves(fit, TAU_SSD_TIER))


def _row(tex: str, start: str) -> list[str]:
    line = next(line for line in tex.splitlines() if line.startswith(start))
    return line.removesuffix(" \\\\").split(" & ")


def test_write_saves_figures_and_the_phases_table(tmp_path):
    a = synthetic()
    assert a.fit.tau_hdd_us == pytest.approx(TAU_HDD) and a.fit.tau_ssd_us == pytest.approx(TAU_SSD)
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    for stem in ("tiering-timeline", "tiering-lvmthin-timeline", "tiering-ratios", "tiering-model", "tiering-whatif",
                 "tiering-sweep"):
        assert (tmp_path / "fig" / f"{stem}.pdf").stat().st_size > 1000
        assert (tmp_path / "fig" / f"{stem}.svg").stat().st_size > 1000
    tex = (tmp_path / "gen" / "tiering-phases.tex").read_text()
    assert tex.count("\\\\") == 1 + 2 * len(SHARES) + 3        # header + both qcow2 pools' phases + LVM thin's three
    # SAS with a snapshot: 500 of 1000 IO/s, no model at SSD speed, none of it SSD-served; the seed's 300 of 2450
    assert _row(tex, "SAS-only pool, qcow2 & with snapshot & ") == [
        "SAS-only pool, qcow2", "with snapshot", "500", "50.0 [50.0, 50.0]", "--", "0", "300", "12.2"]
    # tiered pool with a snapshot: 10^6/910 IO/s, 10.99 % of initial; at the SSD tier's 20 µs: 20/902 = 2.2 %
    tier = _row(tex, "tiered pool, qcow2 & with snapshot & ")
    assert tier[2:4] == ["1\\,099", "11.0 [11.0, 11.0]"] and tier[4].startswith("2.2 [") and tier[5] == "10"
    assert _row(tex, "SAS-only pool, LVM thin & after deletion & ")[6:] == ["--", "--"]   # seed: qcow2 rows
    # the model's column says so, and a reader sees words, not the plan's identifiers
    assert "model: at SSD speed" in tex and "\\_pool" not in tex and "lvmthin" not in tex


def test_the_ratio_chart_tells_model_values_from_measured_ones_in_words():
    spec = present.ratio_chart(synthetic()).to_dict()
    data = [row for rows in spec["datasets"].values() for row in rows]
    assert {row["kind"] for row in data} == {present.MEASURED, present.MODEL}
    assert {row["variant"] for row in data} == {"SAS-only pool, qcow2", "SAS-only pool, LVM thin", "tiered pool, qcow2"}
    assert all(row["pool"] == "tier_pool" for row in data if row["kind"] == present.MODEL)
    legends = [layer["encoding"][ch]["legend"] for layer in spec["layer"] for ch in ("color", "shape")
               if ch in layer["encoding"] and "legend" in layer["encoding"][ch]]
    assert legends and all(legend["labelLimit"] == 0 for legend in legends)          # labels never truncated


def test_the_engines_table_puts_both_engines_per_pool_and_phase():
    a = synthetic()
    t = present.engines_table(a)
    assert list(t.columns) == ["pool", "engine", "phase", "ssd_pct", "ratio_pct", "at_tier_speed_pct"]
    assert len(t) == len(a.phases) and set(t.pool) == {"sas_pool", "tier_pool"}
    assert set(t[t.pool == "sas_pool"].engine) == {"qcow2", "lvmthin"}
    tier = t[t.pool == "tier_pool"].set_index("phase")
    assert list(tier.index) == ["initial", "with", "delete", "after"]            # plan order, not alphabetical
    assert tier.at_tier_speed_pct["initial"] == 100.0
    assert tier.at_tier_speed_pct["with"] == pytest.approx(100 * TAU_SSD_TIER / (0.1 * TAU_SSD_TIER + 0.9 * TAU_HDD))
    assert t[t.pool == "sas_pool"].at_tier_speed_pct.isna().all()


def test_the_sweep_chart_draws_keep_against_the_cached_share_and_is_empty_without_a_sweep():
    seconds, meas = _sweep({Fraction(1, 12): [8.0, 9.0, 7.0], Fraction(1): [90.0, 91.0, 89.0]})
    a = an.TieringAnalysis(None, sweep=coverage.sweep_summary(coverage.sweep_table(seconds, meas, 384 << 20)))
    spec = present.sweep_chart(a).to_dict()
    rows = next(rows for rows in spec["datasets"].values() if rows and "keep_low" in rows[0])
    assert [round(r["pct"], 2) for r in rows] == [8.33, 100.0] and all("estimate" not in r for r in rows)
    assert present.sweep_chart(an.TieringAnalysis(None)).to_dict()["layer"]
