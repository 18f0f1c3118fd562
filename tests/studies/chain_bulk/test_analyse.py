"""The chain-bulk analysis on a synthetic run whose rates follow the chain model with known parameters: ratios,
losses, clone-time changes and per-snapshot averages come out as constructed, the fits recover the parameters, and
the claims are judged."""
import pytest

from snaptax import fio, profiles, studies
from snaptax.claims import verdict
from snaptax.models import chain as chain_model
from snaptax.plan import Clone, Measure, split_replicate
from snaptax.record import PartSet, RunPart, RunRecord, RunWriter, load_run
from snaptax.studies.chain_bulk import analyse as an, plan as planmod
from tests.synthetic import fio_result, rig

# τ0, τ1, τL per (variant, series) in µs per operation; reads lose a third over two snapshots on "VMFS"
TAU = {("on-disk-metadata", "read"): (500.0, 150.0, 100.0), ("on-disk-metadata", "write"): (600.0, 320.0, 0.0),
       ("on-disk-metadata", "clone"): (2e6, 2e6, 0.08e6),
       ("in-memory-metadata", "read"): (500.0, 0.0, 0.0), ("in-memory-metadata", "write"): (600.0, 10.0, 0.0),
       ("in-memory-metadata", "clone"): (2e6, 0.5e6, 0.15e6)}


def rate(recorded_variant, series, n, repeat, target="live"):
    """The chain follows the model, the flat control stays at τ0; both share a drift of the device that differs
    from pair to pair by up to 1.6× (what the host disk did), which the pairing must take out."""
    variant, replicate = split_replicate(recorded_variant)
    drift = 1 + 0.6 * ((3 * n + repeat + replicate) % 4) / 3
    if target == "flat":
        return float(chain_model.iops(0, *TAU[(variant, series)])) * drift
    # -1, 0 or +1 % from pair to pair and length to length: intervals exist and are narrow
    wobble = 1 + 0.01 * ((repeat + replicate + n) % 3 - 1)
    return float(chain_model.iops(n, *TAU[(variant, series)])) * wobble * drift


def make_run(tmp_path, profile="quick"):
    return RunRecord.load(publish_run(tmp_path, profile))


def publish_run(tmp_path, profile="quick", part=None, run_id=None):
    """A synthetic run of the plan at `profile` (of `part` only, published as that part: planmod.parts) whose rates
    depend only on each measurement's coordinates, so that a part measures what the whole run does."""
    p = profiles.get(profile)
    study = planmod.build_plan(p, part=part)
    run_id = run_id or f"20260101T000000Z-{profile}"
    w = RunWriter(rig(tmp_path), planmod.STUDY, p, planmod.parameters(p, "ssd").to_json(),
                  tmp_path / "staging" / run_id, run_id=run_id, part=RunPart(part, planmod.parts(p)) if part else None)
    for vp in study.variants:
        with w.in_variant(vp.variant, {}):
            n = 0
            for index, step in enumerate(vp.plan.steps):
                if isinstance(step, Measure):
                    d = w.measurement_dir(index, step)
                    series = step.phase.removesuffix(planmod.FLAT_SUFFIX)
                    r = (rate(vp.variant, series, n, step.repeat, step.target) if series in planmod.KINDS
                         else 1000.0)
                    res = fio_result(step.job.name, r if step.job.rw == "read" else 0.0,
                                     r if step.job.rw != "read" else 0.0, runtime_s=4)
                    w.record_measurement(index, step, chain_length=n, fio_run=fio.FioRun(d, res, 1.0),
                                         counters_before={}, counters_after={})
                elif isinstance(step, Clone):
                    w.log_event("clone", index=index, repeat=step.repeat, target=step.target, chain_length=n,
                                seconds=1.0 / rate(vp.variant, "clone", n, step.repeat, step.target),
                                bytes=p.disk_size, host={})
                else:
                    n += 1
    return w.publish(tmp_path / "data" / "t" / planmod.STUDY / w.run_id)


def test_a_run_measured_in_parts_gives_the_whole_run_s_values(tmp_path, data_dir):
    """The parts (one configuration in one replicate each, each warming its own session up) read as one record give
    every value of the run that measured the same points in one session (record.parts); the run's identity aside."""
    whole = an.analyse(make_run(tmp_path / "whole"))
    names = planmod.parts(profiles.get("quick"))
    for k, part in enumerate(names):
        publish_run(tmp_path, part=part, run_id=f"202601{k + 2:02d}T000000Z-quick-{part}")
    ref = studies.get(planmod.STUDY).newest_run("t", "quick")
    assert isinstance(ref, PartSet) and len(ref.runs) == len(names) == 6
    parted = an.analyse(load_run(ref))
    mine = {v.key: v for v in parted.values if ".run." not in v.key}
    theirs = {v.key: v for v in whole.values if ".run." not in v.key}
    assert mine.keys() == theirs.keys() and len(mine) > 50
    for key, v in theirs.items():
        got = mine[key]
        assert (got.n, got.text, got.method) == (v.n, v.text, v.method), key
        assert [got.value, got.low, got.high] == pytest.approx([v.value, v.low, v.high], nan_ok=True, rel=1e-9), key
    assert [o.verdict for o in parted.outcomes] == [o.verdict for o in whole.outcomes]
    # the paper prints the set's id short: its first part's start and profile, and its count
    assert parted.derived_values().values["chain_bulk.run.id"].text == "20260102T000000Z-quick (6 parts)"


def test_ratios_losses_and_fits_come_from_the_data(tmp_path):
    a = an.analyse(make_run(tmp_path))
    top = planmod.scale(profiles.get("quick")).max_chain
    v = {x.key: x for x in a.values}
    # VMFS reads after two snapshots: τ(2)/τ(0) = 750/500 → rate ÷1.5 → loss 33.3 %
    loss = v["chain_bulk.on-disk-metadata.read_loss.n2"]
    assert loss.value == pytest.approx(100 / 3, abs=0.5) and loss.low < 100 / 3 < loss.high
    assert v["chain_bulk.on-disk-metadata.write_loss.n1"].value == pytest.approx(100 * 320 / 920, abs=0.5)
    # per further read snapshot: (τ(2)/τ(top))^(1/(top-2)) − 1
    want = 100 * ((750 / (750 + 100 * (top - 2))) ** (1 / (top - 2)) - 1)
    assert v["chain_bulk.on-disk-metadata.read_per_snapshot_after2"].value == pytest.approx(want, abs=0.3)
    assert v["chain_bulk.on-disk-metadata.clone_first_pct"].value == pytest.approx(100, abs=1)
    want = 100 * (((4e6 + 0.08e6 * (top - 1)) / 4e6) ** (1 / (top - 1)) - 1)
    assert v["chain_bulk.on-disk-metadata.clone_per_snapshot_after1"].value == pytest.approx(want, abs=0.2)
    f = a.fits[("in-memory-metadata", "clone")]
    # in units of the control's level over the sweep (drift included), so compare parameters relative to τ0
    assert f.tau1_us / f.tau0_us == pytest.approx(0.25, rel=0.05)
    assert f.tau_layer_us / f.tau0_us == pytest.approx(0.075, rel=0.05)
    assert v["chain_bulk.fit.on-disk-metadata.read.first_pct"].value == pytest.approx(30, abs=1)
    o = {x.claim.id: x for x in a.outcomes}
    # quick: 3 independent replicates, so the claims are judged on estimates over them
    assert (loss.n, loss.independent) == (3, True)
    assert verdict(o["chain_bulk.C001-4a"].claim, o["chain_bulk.C001-4a"].ours) == "agrees"
    assert verdict(o["chain_bulk.C001-4d"].claim, o["chain_bulk.C001-4d"].ours) == "agrees"
    assert verdict(o["chain_bulk.C001-7c"].claim, o["chain_bulk.C001-7c"].ours) == "agrees"
    # the pooled spread is the ±1 % wobble (sd of log(0.99), log(1), log(1.01)), not the 1.6x drift
    assert v["chain_bulk.on-disk-metadata.read_noise_pct"].value == pytest.approx(1.0, rel=0.02)
    assert v["chain_bulk.vs_flat.in-memory-metadata.read.n0"].value == pytest.approx(1, abs=0.01)
    assert v["chain_bulk.on-disk-metadata.read_pairs_needed"].value == 2     # the fewest: a 1 % spread is small
    # Table 1's "large sequential I/O" (C001-4f): the read and the write job together, the mean of their log changes
    large = v["chain_bulk.on-disk-metadata.large_loss.n1"]
    assert large.value == pytest.approx(100 * (1 - (500 / 650 * 600 / 920) ** 0.5), abs=0.5) and large.n == 3
    assert o["chain_bulk.table1_large"].claim.seed_label == "C001-4f"
    assert "chain_bulk.in-memory-metadata.large_loss.n1" in v
    assert len(a.outcomes) == 10


def test_a_run_of_one_replicate_is_not_judged(tmp_path):
    """Smoke (and every run before replicates): the pairs of one run are samples within it."""
    a = an.analyse(make_run(tmp_path, "smoke"))
    o = {x.claim.id: x for x in a.outcomes}
    assert verdict(o["chain_bulk.C001-4a"].claim, o["chain_bulk.C001-4a"].ours) == "not judged"


def test_replicate_estimates_are_over_replicates_not_pairs(tmp_path):
    """Per replicate one log ratio per length (the mean over its pairs), then a t pivot over the replicates."""
    import numpy as np
    import pandas as pd
    rows = []
    for r, shift in enumerate((0.0, 0.1, -0.1)):
        for repeat in (0, 1):
            for n, x in ((0, 0.0), (1, -0.5), (2, -0.6), (4, -0.8)):
                rows.append({"variant": "v", "series": "read", "chain_length": n, "replicate": r, "repeat": repeat,
                             "log_ratio": x + (shift if n else 0.0) + 0.01 * repeat})
    est = an.replicate_estimates(pd.DataFrame(rows), top=4)
    loss = est[("v", "read_loss.n1")]
    assert loss.n == 3 and loss.value == pytest.approx(100 * (1 - np.exp(-0.5)))
    assert loss.interval()[0] < loss.value < loss.interval()[1]
    step = est[("v", "read_per_snapshot_after2")]
    assert step.value == pytest.approx(100 * (np.exp(-0.1) - 1)) and step.se == pytest.approx(0, abs=1e-12)


def test_smoke_runs_have_every_value_the_quick_ones_have(tmp_path):
    smoke = {x.key for x in an.analyse(make_run(tmp_path / "s", "smoke")).values}
    quick = {x.key for x in an.analyse(make_run(tmp_path / "q", "quick")).values}
    assert quick <= smoke | {k for k in quick if ".n4" in k}


def test_runtime_clause_names_the_profile_only_when_shorter():
    from snaptax.studies.chain_bulk.analyse import _runtime_clause
    assert _runtime_clause("full", 30.0) == "The runs last 30\u2009s, the full profile's length"
    quick = _runtime_clause("quick", 2.0)
    assert quick.startswith("The quick profile's run length is its time budget's")
    assert quick.endswith("runs last 30\u2009s, against 2\u2009s here")
