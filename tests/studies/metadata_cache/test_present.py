"""The metadata-cache study's figures and TeX table, from a synthetic analysis (written into tmp_path only)."""
import pytest

from snaptax.studies.metadata_cache import analyse as an, present
from tests.studies.metadata_cache.test_analyse import LAMBDA0, make_run


def test_write_saves_figures_and_the_fit_table(tmp_path):
    a = an.analyse(make_run(tmp_path / "run"))
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    for stem in ("metadata_cache-loss", "metadata_cache-cost"):
        assert (tmp_path / "fig" / f"{stem}.pdf").stat().st_size > 1000
        assert (tmp_path / "fig" / f"{stem}.svg").stat().st_size > 1000
    tex = (tmp_path / "gen" / "metadata_cache-fit.tex").read_text()
    assert tex.count("\\\\") == 1 + 4                  # header + mu, then lambda0, kappa, alpha
    # the host counters were built with MU = 1.9 metadata reads per miss, exactly
    assert f"{present.MISS_MODEL_TEX} & $\\mu$ (reads per miss) & 1.900 & [1.900, 1.900] & " in tex
    assert "lambda0" not in tex and "& kappa" not in tex and "\\textasciicircum" not in tex    # symbols, not names
    lam = next(line for line in tex.splitlines() if " & $\\lambda_0$ & " in line).split(" & ")
    assert float(lam[2]) == pytest.approx(LAMBDA0, abs=0.05) and lam[4] == f"{a.cost.points} \\\\"
