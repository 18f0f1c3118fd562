"""The calibration's charts and TeX table, from a synthetic run (written into temporary directories only)."""
from snaptax.studies.calibration import analyse as an, present

from .test_analyse import make_run


def test_write_saves_figures_and_the_fit_table(tmp_path):
    a = an.analyse(make_run(tmp_path, profile="smoke", snapshot_ratios=(2.0,), requests=300))
    for chart in (present.qd_chart(a), present.span_chart(a), present.reads_double_chart(a)):
        assert chart.to_dict()["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    for stem in ("calibration-qd", "calibration-span", "calibration-reads-double"):
        assert (tmp_path / "fig" / f"{stem}.pdf").stat().st_size > 0
    tex = (tmp_path / "gen" / "calibration-fit.tex").read_text()
    assert "sas10k" in tex and tex.count("\\\\") == 2 and "\\toprule" in tex
