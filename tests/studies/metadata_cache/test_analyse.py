"""The metadata-cache analysis on a synthetic run whose pairs follow the models with known parameters: the loss
per coverage, the metadata reads from the host counters, the fits recovering the parameters, and the implied
coverages."""
import pytest

from snaptax import profiles
from snaptax.errors import AnalysisError
from snaptax.models import metadata_cache as mc
from snaptax.record import RunRecord
from snaptax.studies.metadata_cache import analyse as an, plan as planmod
from tests.synthetic import fio_result, write_run

MU, LAMBDA0, KAPPA, ALPHA = 1.9, 0.2, 6.0, 0.7
NONE_IOPS = 20000.0


def make_run(tmp_path, profile="quick"):
    p = profiles.get(profile)
    study = planmod.build_plan(p)
    cover = {c.name: planmod.cached_fraction(c, p.disk_size) for c in planmod.configs(p)}
    points = [(vp.variant, i, m, n) for vp in study.variants for i, m, n in vp.plan.measurements()]

    def measured(variant, index, step, chain):
        # ±3 % between repeats, the same for both members of a pair (drift the pairing cancels) and a ±2 %
        # disagreement inside the pair that alternates (spread for the intervals)
        drift = 1 + 0.03 * (-1) ** step.repeat
        m = mc.metadata_reads_per_io(cover[variant], MU) if chain else 0.0
        inside = 1 + 0.02 * (-1) ** (step.repeat // 2) if chain else 1.0
        iops = NONE_IOPS * drift / (float(mc.slowdown(m, LAMBDA0, KAPPA, ALPHA)) * inside if chain else 1.0)
        res = fio_result(step.job.name, iops / 2, iops / 2, runtime_s=4)
        ios = 2 * round(iops / 2 * 4)
        reads, writes = ios // 2, ios // 2
        return (res, {"host.reads": 0, "host.writes": 0},
                {"host.reads": reads + m * ios, "host.writes": writes + 0.5 * m * ios}, {})

    params = planmod.parameters(p, "ssd").to_json()
    return RunRecord.load(write_run(tmp_path, planmod.STUDY, profile, params, points, measured))


def test_losses_reads_fits_and_implied_coverages_come_from_the_data(tmp_path):
    a = an.analyse(make_run(tmp_path))
    # the held-out test: models fitted without 3/4 and 15/16 predict them within the bound (the data follow them)
    assert a.heldout is not None and len(a.heldout.points) == 2 and a.heldout.verdict == "predicts"
    assert {p.label for p in a.heldout.points} == {"cover-3-4", "cover-15-16"}
    assert a.value("metadata_cache.cost.heldout.verdict").text == "predicts"
    s = a.summary.set_index("variant")
    assert list(a.summary.coverage) == sorted(a.summary.coverage)
    assert (a.summary.pairs == planmod.scale(profiles.get("quick")).pairs).all()
    assert s.loc["cover-1-1", "m"] == pytest.approx(0, abs=1e-6) and (a.pairs.m_none == 0).all()
    assert s.loc["cover-1-2", "m"] == pytest.approx(MU * 0.5, rel=1e-3)
    assert s.loc["cover-1-2", "w"] == pytest.approx(0.5 * MU * 0.5, rel=1e-3)
    want = 100 * float(mc.loss(MU * 0.5, LAMBDA0, KAPPA, ALPHA))
    assert s.loc["cover-1-2", "loss_pct_low"] < want < s.loc["cover-1-2", "loss_pct_high"]
    assert a.misses and a.cost
    assert a.misses.mu == pytest.approx(MU, rel=1e-3)
    (llo, lhi), (klo, khi), (alo, ahi) = a.cost.ci95
    assert llo <= LAMBDA0 <= lhi and klo <= KAPPA <= khi and alo <= ALPHA <= ahi
    assert a.value("metadata_cache.fit.alpha_verdict").text == "refutes"
    assert a.value("metadata_cache.fit.mu_verdict").text == "refutes"
    imp = a.implied.set_index("stand_for")
    for name, loss in an.PUBLISHED_LOSS.items():
        truth = mc.coverage_for_loss(loss, LAMBDA0, KAPPA, MU, ALPHA)
        assert imp.loc[name, "coverage_low"] <= truth <= imp.loc[name, "coverage_high"]
        assert a.value(f"metadata_cache.implied.{name}.coverage").has_interval
    assert a.outcomes == []          # derived results, not claims


def test_a_run_without_pairs_is_refused(tmp_path):
    rec = make_run(tmp_path)
    with pytest.raises(AnalysisError, match="no pair"):
        an.measurements(_without_pairs(rec))


def _without_pairs(rec):
    class NoPairs:
        path = rec.path
        manifest = rec.manifest
        parameters = rec.parameters

        @staticmethod
        def per_measurement(counters=()):
            df = rec.per_measurement(counters=counters)
            return df[df.phase != "pair"]
    return NoPairs()
