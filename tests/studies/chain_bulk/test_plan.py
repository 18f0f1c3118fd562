"""The chain-bulk plan: the seed's 512 KiB jobs, reads before writes and clones after them at each chain length,
and scales that can carry the per-snapshot claims."""
import pytest

from snaptax import profiles
from snaptax.errors import ConfigError
from snaptax.plan import Clone, Measure, Plan, TakeSnapshot, split_replicate
from snaptax.studies import get
from snaptax.studies.chain_bulk import plan as planmod
from tests.parameters import assert_missing_is_named, assert_round_trip, committed_parameters


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_each_chain_length_pairs_chain_and_control_reads_then_writes_then_clones(name):
    p = profiles.get(name)
    s = planmod.scale(p)
    pairs = s.pairs_for(p.repeats)
    study = planmod.build_plan(p)
    assert len(study.variants) == 2 * s.replicates
    for replicate in range(s.replicates):
        vp = study.variants[2 * replicate]
        assert split_replicate(vp.variant) == ("on-disk-metadata", replicate)     # replicate-major
        steps = vp.plan.steps
        assert [(st.phase, st.target) for st in steps[:2]] == [("prefill", "live"), ("prefill-flat", "flat")]
        warm = s.warmup and replicate == 0        # only the session's first replicate warms up
        first = 6 if warm else 2
        assert [(st.phase, st.target) for st in steps[2:first]] == [("warmup", "live"), ("warmup-flat", "flat")] * 2 * (
            warm)
        chunks, n = {0: []}, 0
        for st in steps[first:]:
            if isinstance(st, TakeSnapshot):
                n += 1
                chunks[n] = []
            else:
                chunks[n].append((st.phase if isinstance(st, Measure) else "clone", st.repeat, st.target))
        assert sorted(chunks) == list(range(s.max_chain + 1))      # a snapshot before every length, measured or not
        assert [k for k, seq in chunks.items() if seq] == list(s.measured_lengths())
        for seq in (q for q in chunks.values() if q):
            assert [x[0].removesuffix("-flat") for x in seq] == [k for k in ("read", "write", "clone")
                                                                  for _ in range(2 * pairs)]
            for i in range(0, len(seq), 2):      # neighbours: one repeat, chain and control, order alternating
                (_, r1, t1), (_, r2, t2) = seq[i], seq[i + 1]
                assert r1 == r2 and (t1, t2) == (("live", "flat") if (r1 + replicate) % 2 == 0 else ("flat", "live"))
        assert sum(isinstance(st, Clone) for st in steps) == 2 * pairs * len(s.measured_lengths())


def test_a_scale_must_measure_the_lengths_the_claims_read():
    with pytest.raises(ConfigError, match="lengths"):
        planmod.BulkScale(max_chain=4, runtime_s=1, ramp_time_s=0, lengths=(0, 1, 4))
    with pytest.raises(ConfigError, match="lengths"):
        planmod.BulkScale(max_chain=4, runtime_s=1, ramp_time_s=0, lengths=(0, 1, 2, 3))
    with pytest.raises(ConfigError, match="replicates"):
        planmod.BulkScale(max_chain=4, runtime_s=1, ramp_time_s=0, replicates=0)


def test_the_jobs_are_the_seeds():
    job = planmod.bulk_job("write", size=1 << 30, runtime_s=4)
    opts = dict(job.options())
    assert opts["bs"] == str(512 << 10) and opts["iodepth"] == "32" and opts["numjobs"] == "4"
    assert opts["rw"] == "write" and opts["direct"] == "1" and opts["time_based"] == "1"


def test_short_chains_are_refused():
    with pytest.raises(ConfigError, match="max_chain"):
        planmod.BulkScale(max_chain=2, runtime_s=1, ramp_time_s=0)
    with pytest.raises(ConfigError, match="runtime_s"):
        planmod.BulkScale(max_chain=3, runtime_s=0, ramp_time_s=0)


def test_describe_comes_from_the_plan():
    text = get("chain_bulk").describe_plan(profiles.get("quick"))
    assert "chain 0..4" in text and "clones" in text and "bs=524288" in text


def test_parameters_read_back_from_the_manifest_and_a_missing_key_is_named():
    params = planmod.parameters(profiles.get("quick"), "ssd")
    assert_round_trip(params)
    assert_missing_is_named(params, "scale.max_chain")     # inside the recorded BulkScale


@pytest.mark.committed
def test_every_committed_run_s_parameters_load(monkeypatch):
    for params in committed_parameters(monkeypatch, "chain_bulk", planmod.ChainBulkParameters).values():
        assert params.scale.max_chain >= 1


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_each_part_is_one_configuration_in_one_replicate_with_its_flat_controls(name):
    """Measured in parts (issue 49.1), each part is one configuration in one replicate (`<configuration>.r<i>`), each
    of its chain measurements with its flat-control pair in the same variant plan; a part is a session of its own
    and warms up as the whole run's first replicate does, so the parts together are the whole plan and the warm-ups
    of the later replicates."""
    p = profiles.get(name)
    s = planmod.scale(p)
    whole = planmod.build_plan(p)
    parts = planmod.parts(p)
    assert parts == tuple(f"{c}.r{r}" for r in range(s.replicates) for c in ("on-disk-metadata", "in-memory-metadata"))
    together = []
    for part in parts:
        (v,) = planmod.build_plan(p, part=part).variants
        configuration, replicate = split_replicate(v.variant)
        assert part == f"{configuration}.r{replicate}"
        runs = [(m.phase, m.repeat, n) for _, m, n in v.plan.measurements() if m.phase in planmod.KINDS]
        flat = [(m.phase.removesuffix(planmod.FLAT_SUFFIX), m.repeat, n) for _, m, n in v.plan.measurements()
                if m.phase in {k + planmod.FLAT_SUFFIX for k in planmod.KINDS}]
        assert sorted(runs) == sorted(flat) and runs
        warmups = [st for st in v.plan.steps
                   if isinstance(st, Measure) and st.phase.removesuffix(planmod.FLAT_SUFFIX) == "warmup"]
        assert len(warmups) == (2 * len(planmod.KINDS) if s.warmup else 0)
        # the whole run's plan of this replicate, with its warm-ups where a later replicate of the whole run has none
        assert [st for st in v.plan.steps if st not in warmups] == \
            [st for st in whole.variant(v.variant).plan.steps if st not in warmups]
        together += [v.variant]
    assert together == [v.variant for v in whole.variants]
    warm_s = Plan(tuple(warmups)).fio_seconds()
    later = (s.replicates - 1) * len(planmod.configs(p))        # the whole run's replicates that do not warm up
    assert sum(planmod.planned_seconds(p, part=part) for part in parts) == \
        pytest.approx(planmod.planned_seconds(p) + later * warm_s)
    assert get("chain_bulk").part_seconds(p) == {part: planmod.planned_seconds(p, part=part) for part in parts}


