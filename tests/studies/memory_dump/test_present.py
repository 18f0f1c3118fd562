"""The memory-dump study's figures and TeX table, from synthetic analyses (conftest: each made once)."""
from snaptax.models import memory_dump as md
from snaptax.studies.memory_dump import present


def test_write_saves_figures_and_table(tmp_path, quick_analysis):
    a = quick_analysis
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    for stem in ("memory_dump-grid", "memory_dump-predictions", "memory_dump-curve"):
        assert (tmp_path / "fig" / f"{stem}.pdf").stat().st_size > 1000
        assert (tmp_path / "fig" / f"{stem}.svg").exists()
    fit = (tmp_path / "gen" / "memory_dump-fit.tex").read_text()
    assert fit.count("\\\\") == 1 + 2 * len(md.MODELS)          # header + one row per device and model
    assert "raid1\\_10k & after & 6.00 [" in fit and "ssd & zero\\_skip & " in fit
    m = present.model_frame(a)
    # each role's best model by AIC: the synthetic data were made with `after`
    assert set(m.role) == {"ssd", "raid1_10k"} and set(m.model) == {"after"}
    assert set(m.wait_ms) == set(a.meas.wait_ms)
    assert set(present.model_frame(a, "overlap").model) == {"overlap"}


def test_guest_figures_and_table_when_the_run_has_a_guest_phase(tmp_path, smoke_guest_analysis):
    a = smoke_guest_analysis
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    for stem in ("memory_dump-guest-progress", "memory_dump-guest-compare"):
        assert (tmp_path / "fig" / f"{stem}.pdf").stat().st_size > 1000
    tab = (tmp_path / "gen" / "memory_dump-guest.tex").read_text()
    assert tab.count("\\\\") == 1 + len(a.guest_summary) and "precopy-p2048-w2 & 274 &" in tab
    frame = present.guest_compare_frame(a)
    assert set(frame.label) == set(a.guest_summary.label) and len(frame) == 7   # bg has no bandwidth model


def test_no_guest_figures_without_a_guest_phase(tmp_path, smoke_analysis):
    a = smoke_analysis
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    assert not (tmp_path / "gen" / "memory_dump-guest.tex").exists()
