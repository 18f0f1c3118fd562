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
# the read job: a read miss reads S_READ slices (±0.02 between repeats, the mean exact over 4 pairs), and the read
# job's loss with the snapshot is READ_LOSS at every coverage
S_READ, READ_LOSS = 1.0, 0.4
# the randrw job's reads then read S_READ per miss and its writes the rest of MU: 50/50 ⇒ MU = (S_READ + S_WRITE)/2
S_WRITE = 2 * MU - S_READ


def make_run(tmp_path, profile="quick", read=True):
    """A synthetic run of the profile's plan; read=False: without the read job's runs (as every run before it)."""
    p = profiles.get(profile)
    study = planmod.build_plan(p)
    cover = {c.name: planmod.cached_fraction(c, p.disk_size) for c in planmod.configs(p)}
    points = [(vp.variant, i, m, n) for vp in study.variants for i, m, n in vp.plan.measurements()
              if read or m.job.name not in (planmod.READ_JOB, planmod.ALLOCATE)]

    def measured(variant, index, step, chain):
        # ±3 % between repeats, the same for both members of a pair (drift the pairing cancels) and a ±2 %
        # disagreement inside the pair that alternates (spread for the intervals)
        drift = 1 + 0.03 * (-1) ** step.repeat
        inside = 1 + 0.02 * (-1) ** (step.repeat // 2) if chain else 1.0
        before = {"host.reads": 0, "host.writes": 0}
        if step.phase == planmod.ALLOCATE:
            return fio_result(step.job.name, 0.0, 4.0, runtime_s=1), before, {"host.reads": 0, "host.writes": 8}, {}
        if step.job.name == planmod.READ_JOB:
            iops = NONE_IOPS * drift * ((1 - READ_LOSS) * inside if chain else 1.0)
            reads = round(iops * 2)
            s = S_READ + 0.02 * (-1) ** step.repeat
            extra = (1 - cover[variant]) * s * reads if chain else 0.0
            return (fio_result(step.job.name, iops, 0.0, runtime_s=2), before,
                    {"host.reads": reads + extra, "host.writes": 0}, {})
        m = mc.metadata_reads_per_io(cover[variant], MU) if chain else 0.0
        iops = NONE_IOPS * drift / (float(mc.slowdown(m, LAMBDA0, KAPPA, ALPHA)) * inside if chain else 1.0)
        res = fio_result(step.job.name, iops / 2, iops / 2, runtime_s=4)
        ios = 2 * round(iops / 2 * 4)
        reads, writes = ios // 2, ios // 2
        return (res, before, {"host.reads": reads + m * ios, "host.writes": writes + 0.5 * m * ios}, {})

    params = planmod.parameters(p, "ssd").to_json()
    if not read:       # the manifest of a run before the read job: none of its keys
        params = {k: v for k, v in params.items() if not k.startswith("read_")}
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


def test_the_read_job_s_reads_per_read_slices_per_miss_and_the_writes_share(tmp_path):
    a = an.analyse(make_run(tmp_path))
    v = {x.key: x for x in a.values}
    rd = "metadata_cache.randread"
    # the randrw fit and summary are of the randrw job alone, as without the read job
    assert a.misses and a.misses.mu == pytest.approx(MU, rel=1e-3)
    assert (a.summary.pairs == 4).all() and len(a.summary) == 6 and len(a.pairs) == 24
    assert set(a.read_pairs.variant) == {"cover-1-8", "cover-1-1"} and len(a.read_pairs) == 8
    # host reads per guest read: 1 without the snapshot; 1 + (1 - c)·S_READ with it (read job), 1 + 2·MU·(1 - c)
    # with it (randrw: a read and a write per guest read)
    for job, per_read in (("randread", S_READ), ("randrw", 2 * MU)):
        assert v[f"metadata_cache.{job}.host_reads_per_read.cover-1-8.none"].value == pytest.approx(1.0)
        assert v[f"metadata_cache.{job}.host_reads_per_read.cover-1-8.snapshot"].value == pytest.approx(
            1 + 7 / 8 * per_read, rel=1e-3)
    assert v[f"{rd}.host_reads_per_read.cover-1-1.snapshot"].value == pytest.approx(1.0)
    assert "metadata_cache.randread.host_reads_per_read.cover-1-2.snapshot" not in v    # not measured there
    assert v["metadata_cache.randrw.host_reads_per_read.cover-1-2.snapshot"].value == pytest.approx(1 + MU, rel=1e-3)
    # the prediction at every coverage, and the read job's slices per miss with its interval
    assert v[f"{rd}.predicted.cover-1-8"].value == pytest.approx(1.875)
    assert v[f"{rd}.predicted.cover-3-4"].value == pytest.approx(1.25)
    s = v[f"{rd}.slices_per_miss"]
    assert s.value == pytest.approx(S_READ, rel=1e-3) and s.n == 4 and s.low < S_READ < s.high
    assert s.method == "t" and s.unit == "slices"
    w = v["metadata_cache.randrw.slices_per_write_miss"]
    assert w.value == pytest.approx(S_WRITE, rel=1e-3) and w.n == 4 and w.has_interval
    assert v[f"{rd}.reads_per_io.cover-1-8"].value == pytest.approx(7 / 8 * S_READ, rel=1e-3)
    for variant in ("cover-1-8", "cover-1-1"):
        loss = v[f"{rd}.loss.{variant}"]
        assert loss.low < 100 * READ_LOSS < loss.high
    assert v[f"{rd}.pairs"].value == 4 and v[f"{rd}.runtime_s"].value == 2 and v["metadata_cache.l2_tables"].value == 4
    jobs = a.jobs.set_index(["job", "variant"])
    assert list(a.jobs.job) == ["randrw"] * 6 + ["randread"] * 2
    assert jobs.loc[("randread", "cover-1-8"), "predicted"] == pytest.approx(1.875)
    # the finding reads the directions from the intervals
    text = v[f"{rd}.finding"].text
    assert text.startswith("In this run the read job was measured with 1/8 of the tables cached and with every "
                           "table cached (4 pairs of 2-s runs each).")
    assert f"one slice per miss predicts {v[f'{rd}.predicted.cover-1-8'].formatted()}" in text
    assert f"That is {s.formatted_ci()} slices per read miss, an interval that includes 1 (one slice per miss) " \
           "and lies below the random job's 1.90 [1.90, 1.90] per lookup miss" in text
    assert f"If its reads miss as the read job's do, the random job's write misses read {w.formatted_ci()} slices " \
           "each (paired by repeat" in text
    assert text.endswith(f"lost {v[f'{rd}.loss.cover-1-8'].formatted_ci()}\u2009% with 1/8 of the tables cached and "
                         f"{v[f'{rd}.loss.cover-1-1'].formatted_ci()}\u2009% with every table cached.")
    a.derived_values()   # every key once


def test_a_run_without_the_read_job_keeps_every_randrw_value_and_says_so(tmp_path):
    old = an.analyse(make_run(tmp_path / "old", read=False))
    new = an.analyse(make_run(tmp_path / "new"))
    keys_old = {x.key for x in old.values}
    read_keys = {k for k in keys_old if k.startswith("metadata_cache.randread.")}
    assert read_keys == {f"metadata_cache.randread.predicted.{c.name}"
                         for c in planmod.configs(profiles.get("quick"))} | {"metadata_cache.randread.finding"}
    assert "metadata_cache.randrw.slices_per_write_miss" not in keys_old
    assert old.value("metadata_cache.randread.finding").text.startswith("This run predates the read job")
    assert old.read_pairs.empty and list(old.read_pairs.columns) == list(an.PAIR_COLUMNS)
    assert set(old.jobs.job) == {"randrw"}
    # every value of the randrw job is the same with or without the read job's runs beside it
    for x in old.values:
        if not x.key.startswith("metadata_cache.randread."):
            y = new.value(x.key)
            assert x.text == y.text, x.key
            assert [x.value, x.low, x.high] == pytest.approx([y.value, y.low, y.high], nan_ok=True), x.key
    assert old.derived_values().values.keys() <= new.derived_values().values.keys()


def test_words_for_coverages_and_intervals():
    from snaptax.values import Value

    assert an.coverage_words(0.125) == "1/8 of the tables cached"
    assert an.coverage_words(0.9375) == "15/16 of the tables cached"
    assert an.coverage_words(1.0) == "every table cached"
    assert an.coverage_words(0.1234567) == "0.123 of the tables cached"
    a, b = Value("s.a", 1.0, "", 0.9, 1.1, 4), Value("s.b", 1.9, "", 1.8, 2.0, 4)
    assert an.against(a, b) == "lies below" and an.against(b, a) == "lies above"
    assert an.against(a, Value("s.c", 1.05, "", 1.0, 1.1, 4)) == "overlaps"
    assert an.against(a, Value("s.d", 1.0)) == "has no interval to set against"


def test_a_smoke_run_s_read_job_at_one_eighth_only(tmp_path):
    a = an.analyse(make_run(tmp_path, profile="smoke"))
    v = {x.key: x for x in a.values}
    assert set(a.read_pairs.variant) == {"cover-1-8"}
    assert v["metadata_cache.randread.slices_per_miss"].n == 2
    assert "with 1/8 of the tables cached (2 pairs of 1-s runs each)" in v["metadata_cache.randread.finding"].text
