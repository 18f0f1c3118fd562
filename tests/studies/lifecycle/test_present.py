"""The lifecycle study's figures and TeX table, from a synthetic analysis (written into tmp_path only)."""
import math

import pytest

from snaptax.studies.lifecycle import analyse as an, plan as planmod, present
from tests.studies.lifecycle.test_analyse import TRUTH, VM, MiB, deletion, make_run


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    return an.analyse(make_run(tmp_path_factory.mktemp("run")))


def test_write_saves_figures_and_the_deletions_table(analysis, tmp_path):
    a = analysis
    present.write(a, tmp_path / "fig", tmp_path / "gen")
    for stem in ("lifecycle-timeline-light", "lifecycle-timeline-saturated", "lifecycle-deletion-times",
                 "lifecycle-model"):
        assert (tmp_path / "fig" / f"{stem}.pdf").stat().st_size > 1000
        assert (tmp_path / "fig" / f"{stem}.svg").stat().st_size > 1000
    tex = (tmp_path / "gen" / "lifecycle-deletions.tex").read_text()
    assert tex.count("\\\\") == 1 + len(planmod.LOADS) * len(planmod.METHODS)   # header + one row per timeline
    # the light iterative deletion as the consolidation model made it, beside a writer at 30 writes/s
    d = deletion("light", "iterative", VM["light"])
    assert (f"light & iterative & yes & {d['seconds']:.1f} & 0.0 & {len(d['iterations'])} & {d['stun_s']:.2f} & 30 "
            "\\\\") in tex
    # saturated (400 writes/s, above r*): the iterative one does not converge, no stun; active made not to converge
    d = deletion("saturated", "iterative", VM["saturated"])
    assert f"saturated & iterative & no & {d['seconds']:.1f} & 3.0 & {len(d['iterations'])} & -- & 400 \\\\" in tex
    assert "saturated & active & no & " in tex


def test_the_model_frame_converges_below_the_critical_rate_only(analysis):
    a = analysis
    m = present.model_frame(a)
    assert list(m.columns) == ["writer_iops", "seconds", "iterations", "converged"] and len(m) == 80
    assert m.writer_iops.iloc[0] == 0 and m.converged.iloc[0]
    # r* = c0/(a + b) of the parameters the iterations were built with
    assert a.fit.critical_rate == pytest.approx(TRUTH["c0"] / (TRUTH["a"] + TRUTH["b"]), rel=0.05)
    assert not m[m.writer_iops > a.fit.critical_rate].converged.any()
    assert (m.seconds.map(math.isnan) == ~m.converged).all()
    params = present.model_table(a)
    assert len(params) == 5 and params.estimate.iloc[1] == pytest.approx(TRUTH["c0"] / MiB, rel=0.02)
