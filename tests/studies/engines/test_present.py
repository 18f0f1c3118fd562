"""The engine comparison's figures and TeX tables, from a synthetic analysis."""
from snaptax.studies.engines import present
from tests.studies.engines.test_analyse import make_run


def test_write_saves_figures_and_tables(tmp_path):
    a = make_run(tmp_path / "run")
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    for stem in ("engines-cost", "engines-ratio", "engines-space"):
        assert (tmp_path / "fig" / f"{stem}.pdf").stat().st_size > 1000
        assert (tmp_path / "fig" / f"{stem}.svg").exists()
    table = (tmp_path / "gen" / "engines-table.tex").read_text()
    assert "lvmthin & 64 & " in table and "20.0 & 20.0" in table          # cofw 8 KiB: measured and mechanism
    fit = (tmp_path / "gen" / "engines-fit.tex").read_text()
    assert "cofw & copy-out & 1.00 [1.00, 1.00]" in fit and "lvmthin & redirect-copy & 1 (fixed)" in fit
    ratios = present.ratio_frame(a)
    assert set(ratios.measure) == set(present.RATIO_MEASURES.values()) and len(ratios) == 3 * len(a.summary)
