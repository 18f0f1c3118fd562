"""The database-snapshot study's figures and TeX table, from synthetic runs (written into tmp_path only). The study's
analysis tests build the runs table directly (test_analyse._runs); the analysis here is made of the same pure steps
analyse() chains (summary_table, fit_models) on such a table."""
import pandas as pd
import pytest

from snaptax.studies.db_snapshots import analyse as an, present
from tests.studies.db_snapshots.test_analyse import PAGES, _runs

US_PER_PAGE = {"source_write_s": 10, "copy_read_s": 20, "copy_write_s": 30, "commit_s": 40}


def synthetic():
    # the first snapshot adds half the baseline on the RAID5 (150 %), a fifth on the SSD (120 %)
    runs = pd.concat([_runs(1.0, 0.5 / PAGES, 0.25 / PAGES, "raid5_15k_6"),
                      _runs(0.5, 0.1 / PAGES, 0.05 / PAGES, "ssd_snapshots")], ignore_index=True)
    runs = runs.assign(first_snapshot_s=0.0, **{k: PAGES * us * 1e-6 for k, us in US_PER_PAGE.items()})
    return an.DbSnapshotAnalysis(None, runs=runs, summary=an.summary_table(runs), fits=an.fit_models(runs))


def test_the_durations_are_drawn_on_a_log_axis_with_the_means_as_ticks():
    """Without a snapshot the statement takes a fraction of what it takes with two on the RAID5: a linear axis
    flattens the first near zero (issue 50), and on a log axis a bar has no length."""
    layers = present.duration_chart(synthetic()).to_dict()["layer"]
    assert [layer["mark"]["type"] for layer in layers] == ["tick", "rule", "point"]
    # the tick's and the dots' y name the scale; the rule's interval shares it
    assert [layer["encoding"]["y"].get("scale", {}).get("type") for layer in layers] == ["log", None, "log"]


def _row(tex: str, start: str) -> list[str]:
    line = next(line for line in tex.splitlines() if line.startswith(start))
    return line.removesuffix(" \\\\").split(" & ")


def test_write_saves_figures_and_the_summary_table(tmp_path):
    a = synthetic()
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    for stem in ("db_snapshots-duration", "db_snapshots-time", "db_snapshots-model"):
        assert (tmp_path / "fig" / f"{stem}.pdf").stat().st_size > 1000
        assert (tmp_path / "fig" / f"{stem}.svg").stat().st_size > 1000
    tex = (tmp_path / "gen" / "db_snapshots-summary.tex").read_text()
    assert tex.count("\\\\") == 1 + 2 * 3                     # header + two devices × k = 0, 1, 2
    # k = 1 on the RAID5: 1.5 s × mean drift 1.125, 150 % of k = 0 (the drift cancels), the time split as built
    raid5 = _row(tex, "raid5\\_15k\\_6 & 1 & ")
    assert float(raid5[2].split(" [")[0]) == pytest.approx(1.5 * 1.125, abs=0.01)
    assert raid5[4:] == ["150 [150, 150]", "10", "20", "30", "40"]
    assert _row(tex, "ssd\\_snapshots & 2 & ")[4] == "130 [130, 130]"
    assert tex.count("& -- & -- & -- & -- & -- \\\\") == 2      # k = 0: no ratio, no first-written pages


def test_the_time_split_has_one_bar_per_device_snapshot_count_and_counter():
    chart = present.time_split_chart(synthetic())
    assert len(chart.data) == 2 * 2 * len(an.TIME_KEYS)         # devices × k = 1, 2 × counters
    assert set(chart.data.us_per_page.round(6)) == set(US_PER_PAGE.values())
    assert set(chart.data["where"]) == set(present.TIME_TITLES.values())
