"""The seed 001 study: its plan, and its rendering from a synthetic published run with known numbers."""
import json

import pytest

from snaptax import fio, profiles, rig as rigmod
from snaptax.plan import Measure, TakeSnapshot
from snaptax.record import RunSession
from snaptax.studies import chain_length as study


def test_plan_builds_up_and_tears_down_the_chain():
    p = profiles.get("smoke")
    plan = study.build_plan(p)
    assert plan.max_chain_length == p.max_chain
    chains = [n for _, m, n in plan.measurements() if m.phase != "prefill"]
    assert chains[0] == 0 and chains[-1] == 0
    per_point = p.repeats * len(study.WORKLOADS)
    assert len(chains) == per_point * (2 * p.max_chain + 1)
    jobs = {m.job.rw for _, m, _ in plan.measurements() if m.phase == "create"}
    assert jobs == {"randrw", "readwrite"}
    assert sum(isinstance(s, TakeSnapshot) for s in plan.steps) == p.max_chain


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_configs_put_metadata_on_disk_or_in_memory(name):
    size = profiles.get(name).disk_size
    small, covering = study.qcow2_configs(size)
    tables = small.l2_bytes_for(size)
    assert small.l2_cache_size < tables <= covering.l2_cache_size
    assert small.cluster_size == covering.cluster_size and small.extended_l2 == covering.extended_l2


def synthetic_run(iops_of):
    """Publish a run whose fio results are iops_of(variant, job, phase, n); no daemon, no fio."""
    rig = rigmod.load("local")
    p = profiles.get("smoke")
    plan = study.build_plan(p)
    with RunSession(rig, study.STUDY, "smoke", {"profile": p}) as s:
        for variant in ("on-disk-metadata", "in-memory-metadata"):
            cfg = {"config": {"l2_cache_size": 8192}}
            with s.in_variant(variant, cfg):
                for index, m, n in plan.measurements():
                    d = s.measurement_dir(index, m)
                    iops = iops_of(variant, m.job.name, m.phase, n)
                    side = {"iops": iops / 2, "bw": 1, "total_ios": int(iops), "runtime": 1000,
                            "clat_ns": {}, "lat_ns": {}}
                    result = {"jobs": [{"jobname": m.job.name, "error": 0, "read": side, "write": side}]}
                    s.record_measurement(index, m, chain_length=n, fio_run=fio.FioRun(d, result, 1.0),
                                         counters_before={"disk_reads": 0},
                                         counters_after={"disk_reads": int(iops) * (2 if n else 1)})
    return s.published


def test_render_prints_the_loss_computed_from_the_data(data_dir, work_dir, tmp_path):
    def iops_of(variant, job, phase, n):
        base = 1000.0 if variant == "on-disk-metadata" else 2000.0
        return base if n == 0 else base * (0.4 if variant == "on-disk-metadata" else 0.3) / (1 + 0.1 * (n - 1))
    run = synthetic_run(iops_of)
    outcomes = study.render(run, tmp_path / "fig", tmp_path / "gen")
    macros = (tmp_path / "gen" / "seed001.tex").read_text()
    assert "\\newcommand{\\stChainLossOnDiskMetadataRandrw}{60}" in macros
    assert "\\newcommand{\\stChainLossInMemoryMetadataRandrw}{70}" in macros
    assert "\\newcommand{\\stChainHostReadsPerVmReadOnDiskMetadataSnap}{2.00}" in macros
    assert (tmp_path / "fig" / "seed001-random.pdf").stat().st_size > 1000
    verdicts = {o.claim.id: o.verdict for o in outcomes}
    assert verdicts["seed001-loss-on-disk-metadata-randrw"] == "agrees"        # 60 vs 65 ± 15
    assert verdicts["seed001-loss-in-memory-metadata-randrw"] == "same direction"  # 70 vs 35 ± 15
    fit = (tmp_path / "gen" / "seed001-fit.tex").read_text()
    assert "on-disk-metadata" in fit
