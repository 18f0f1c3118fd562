"""The engine-comparison analysis on synthetic runs whose counters follow each engine's mechanism exactly, with
known IOPS: bytes and time per first write, space, ratios with 95 % intervals, fits, values, verdicts."""
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from snaptax import profiles, values
from snaptax.errors import AnalysisError
from snaptax.models import cow
from snaptax.paper import macros
from snaptax.record import RunRecord
from snaptax.studies.engines import analyse as an, plan as planmod
from tests.synthetic import fio_result, write_run

KiB, MiB = 1024, 1 << 20
ROOT = Path(__file__).resolve().parents[3]
QUICK_VARIANTS = ("qcow2-c64k", "qcow2-c64k-ext", "cofw-p8k", "cofw-p64k", "lvmthin-c64k")
IOPS = {"base-write": 1000.0, "first-write": 500.0, "steady-write": 900.0,
        "base-read": 2000.0, "snap-read": 1600.0, "steady-read": 2000.0, "prefill": 100.0, "overwrite": 50.0}


def broken_grains(p: profiles.Profile, v: planmod.Variant) -> int:
    """Grains a first-write phase breaks in the synthetic run: the model's expectation, rounded."""
    s = planmod.scale(p)
    return int(round(float(cow.expected_grains_hit(s.writes, s.disk_size, v.copy_grain, 4096, replacement=True))))


def make_run(tmp_path, profile="quick", names=QUICK_VARIANTS, noise=0.0, cofw_copies=True, drift=0.0,
             claim_plan=False):
    """A published run of the chosen variants. First-write IOPS are 500 × (1 ∓ noise) in alternate cycles; every
    IOPS drifts by `drift` (a fraction) over each variant's plan. claim_plan: the claim variant runs its own plan
    (build_plan: more cycles, some without reads or first-write), as in a real run."""
    p = profiles.get(profile)
    s = planmod.scale(p)
    by_name = {v.name: v for v in planmod.variants(p)}
    plan = planmod.variant_plan(p)
    plans = {vp.variant: vp.plan for vp in planmod.build_plan(p).variants} if claim_plan else {}
    points = [(name, i, m, n) for name in names for i, m, n in plans.get(name, plan).measurements()]
    state: dict[str, dict[str, float]] = {}
    first_done: dict[str, bool] = {}

    def measured(variant, index, step, chain):
        v = by_name[variant]
        c = state.setdefault(variant, {"host.sectors_read": 0.0, "host.sectors_written": 0.0})
        if chain == 0:            # the snapshot was deleted: no snapshot space
            c["engine.snapshot_allocated_bytes"] = 0.0
        if v.family == "cofw":
            c.setdefault("engine.pages_copied", 0.0)
            c.setdefault("engine.bytes_copied", 0.0)
        if v.family == "lvmthin":
            c.setdefault("engine.chunks_broken", 0.0)
        before = dict(c)
        writing = step.job.rw in ("write", "randwrite")
        ios = step.job.size // step.job.bs if step.phase in ("prefill", "overwrite") else int(
            dict(step.job.options())["number_ios"])
        c["host.sectors_written" if writing else "host.sectors_read"] += ios * step.job.bs / 512
        if chain == 0:
            first_done[variant] = False
        if step.phase == "first-write":
            first_done[variant] = True
            broken = broken_grains(p, v)
            if v.family == "cofw":             # read the old page, write it to the sparse file (counted apart)
                if cofw_copies:
                    c["host.sectors_read"] += broken * v.grain / 512
                    c["engine.pages_copied"] += broken
                    c["engine.bytes_copied"] += broken * v.grain
                    c["engine.snapshot_allocated_bytes"] = broken * v.grain
            elif v.family == "lvmthin":        # kcopyd: read and write the whole chunk
                c["host.sectors_read"] += broken * v.grain / 512
                c["host.sectors_written"] += broken * v.grain / 512
                c["engine.chunks_broken"] += broken
                c["engine.snapshot_allocated_bytes"] = broken * v.grain
            else:                              # qcow2: the model's own prediction for k writes
                hit = float(cow.expected_grains_hit(s.writes, s.disk_size, v.copy_grain, 4096, True))
                r, w = cow.copy_bytes(v.copy_grain, 4096, "redirect-merge")
                c["host.sectors_read"] += hit * float(r) / 512
                c["host.sectors_written"] += hit * float(w) / 512
                c["engine.snapshot_allocated_bytes"] = hit * v.grain
        elif step.phase == "overwrite":        # every grain broken: the snapshot holds the whole volume
            c["engine.snapshot_allocated_bytes"] = float(s.disk_size)
            if v.family == "lvmthin":
                c["engine.chunks_broken"] += s.disk_size / v.grain - (broken_grains(p, v)
                                                                       if first_done.get(variant) else 0)
        iops = IOPS[step.phase] * (1 + drift * index / len(plan.steps))
        if step.phase == "first-write":
            iops *= 1 + noise * (1 if step.repeat % 2 else -1)
        result = fio_result(step.job.name, 0.0 if writing else iops, iops if writing else 0.0,
                            runtime_s=ios / iops)
        return result, before, dict(c), {}

    parameters = planmod.EnginesParameters(scale=s, device="ssd", io_size=4096, variants=tuple(names)).to_json()
    variants = {n: {"engine": by_name[n].family, "study": by_name[n].describe()} for n in names}
    run = write_run(tmp_path, "engines", profile, parameters, points, measured, variants=variants)
    return an.analyse(RunRecord.load(run))


def test_bytes_time_and_space_per_first_write_come_from_the_counters(tmp_path):
    a = make_run(tmp_path)
    p = profiles.get("quick")
    k = planmod.scale(p).writes
    by_name = {v.name: v for v in planmod.variants(p)}
    assert a.value("engines.bytes_per_first_write_kib.cofw-p8k").value == pytest.approx(20.0)    # 8 in, 8 out, 4
    assert a.value("engines.bytes_per_first_write_kib.cofw-p64k").value == pytest.approx(132.0)
    assert a.value("engines.bytes_per_first_write_kib.lvmthin-c64k").value == pytest.approx(132.0)
    assert a.value("engines.model_bytes_per_first_write_kib.lvmthin-c64k").value == pytest.approx(132.0)
    assert a.value("engines.bytes_per_first_write_kib.qcow2-c64k-ext").value == pytest.approx(4.0)
    broken = broken_grains(p, by_name["lvmthin-c64k"])
    assert a.value("engines.space_first_mib.lvmthin-c64k").value == pytest.approx(broken * 64 * KiB / MiB)
    assert a.value("engines.space_first_mib.cofw-p8k").value == pytest.approx(
        broken_grains(p, by_name["cofw-p8k"]) * 8 / 1024)
    assert a.value("engines.space_steady_mib.qcow2-c64k").value == pytest.approx(256.0)
    # extra time per first write: k/500 − k/1000 seconds over the broken grains
    assert a.value("engines.extra_us_per_first_write.lvmthin-c64k").value == pytest.approx(
        (k / 500 - k / 1000) * 1e6 / broken)
    assert a.value("engines.first_fraction.lvmthin-c64k").value == pytest.approx(broken / k)
    assert a.value("engines.first_over_expected.cofw-p8k").value == pytest.approx(1.0, abs=1e-3)
    with pytest.raises(KeyError):                  # qcow2 counts no grains: nothing to compare
        a.value("engines.first_over_expected.qcow2-c64k")
    assert set(a.first_writes.variant) == {"cofw-p8k", "cofw-p64k", "lvmthin-c64k"}
    assert a.value("engines.writes").value == k and a.value("engines.cycles").value == p.repeats
    assert a.value("engines.disk_mib").value == 256
    u = a.value("engines.space_first_mib.cofw-p8k")
    assert (u.unit, u.digits, u.n) == ("MiB", 1, 2)
    # strictly positive quantities over the cycles on the log scale; a share and the differences linear
    assert {a.value(f"engines.{m}.cofw-p8k").method for m in an.POSITIVE} <= {"log t", ""}
    assert {a.value(f"engines.{m}.cofw-p8k").method
            for m in ("first_fraction", "extra_us_per_first_write", "bytes_per_first_write_kib")} <= {"t", ""}


def test_fits_recover_the_mechanisms(tmp_path):
    a = make_run(tmp_path)
    assert set(a.fits) == {"qcow2", "qcow2-ext", "cofw", "lvmthin"}
    for fam in ("cofw", "lvmthin", "qcow2"):          # counters follow the mechanisms: c = 1, M = 0
        assert a.fits[fam].copy_factor == pytest.approx(1.0, abs=1e-6)
        assert a.fits[fam].metadata_bytes == pytest.approx(0.0, abs=1.0)
    assert not a.fits["cofw"].copy_factor_fixed          # two page sizes separate c from M
    assert a.fits["lvmthin"].copy_factor_fixed           # one chunk size cannot
    assert a.value("engines.fit.cofw.c").value == pytest.approx(1.0)
    assert a.value("engines.fit.lvmthin.c").method == "fixed"
    assert a.value("engines.fit.cofw.points").value == 4  # first writes only: 2 pages × 2 cycles
    assert list(a.fits_table().family) == ["qcow2", "qcow2-ext", "cofw", "lvmthin"]


def test_ratios_and_losses_carry_paired_intervals(tmp_path):
    noise = 0.01
    a = make_run(tmp_path, noise=noise)
    ratios = np.array([0.5 * (1 - noise), 0.5 * (1 + noise)])        # first-write ÷ base-write, per cycle
    logs = np.log(ratios)
    half = sps.t.ppf(0.975, 1) * logs.std(ddof=1) / math.sqrt(2)
    r = a.value("engines.first_ratio.cofw-p8k")
    assert r.value == pytest.approx(math.exp(logs.mean()))
    assert (r.low, r.high) == (pytest.approx(math.exp(logs.mean() - half)), pytest.approx(math.exp(logs.mean() + half)))
    assert r.n == 2 and r.method == "paired log-ratio t"
    loss = a.value("engines.first_loss.lvmthin-c64k")
    assert loss.value == pytest.approx(100 * (1 - math.exp(logs.mean())))
    assert loss.low == pytest.approx(100 * (1 - r.high)) and loss.high == pytest.approx(100 * (1 - r.low))
    assert a.value("engines.steady_ratio.qcow2-c64k").value == pytest.approx(0.9)
    assert a.value("engines.snap_read_ratio.lvmthin-c64k").value == pytest.approx(0.8)
    assert a.value("engines.steady_loss.lvmthin-c64k").value == pytest.approx(10.0)


def test_steady_phases_are_bracketed_against_drift(tmp_path):
    """A drift through the run moves the steady phases away from their own cycle's base measurement; the
    bracketing base measurements (this cycle's and the next's, or the closing ones) take most of it out."""
    a = make_run(tmp_path, drift=0.2)
    cyc = a.cycles[a.cycles.variant == "qcow2-c64k"]
    naive = float(np.exp(np.mean(np.log(cyc["steady-write_write_iops"] / cyc["base-write_write_iops"]))))
    bracketed = a.value("engines.steady_ratio.qcow2-c64k").value
    assert abs(naive - 0.9) > 3 * abs(bracketed - 0.9)
    assert bracketed == pytest.approx(0.9, abs=0.02)     # the bracket is centred near, not on, the steady phase


def test_verdicts_on_seed001_vvol(tmp_path):
    a = make_run(tmp_path, noise=0.01)
    got = {o.claim.id: o for o in a.outcomes}
    assert set(got) == {"engines.vvol_loss.first", "engines.vvol_loss.steady"}
    first, steady = got["engines.vvol_loss.first"], got["engines.vvol_loss.steady"]
    assert first.claim.no_effect == 0.0 and first.claim.tolerance == an.LOSS_TOLERANCE_PP
    assert first.claim.value_key == "engines.first_loss.lvmthin-c64k" and first.claim.tolerance_basis
    assert first.claim.published_text == "No impact" and "LVM thin, 64 KiB" in first.claim.stand_in
    assert first.verdict == "not judged"
    assert steady.verdict == "not judged"
    wide = make_run(tmp_path / "wide", noise=0.3)
    assert {o.claim.id: o.verdict for o in wide.outcomes}["engines.vvol_loss.first"] == "not judged"


def test_a_failed_fit_raises(tmp_path):
    with pytest.raises(AnalysisError, match="cannot be fitted to cofw"):
        make_run(tmp_path, cofw_copies=False)


def test_smoke_run_provides_every_value_the_paper_asks_for(tmp_path):
    smoke = profiles.get("smoke")
    a = make_run(tmp_path, profile="smoke", names=tuple(v.name for v in planmod.variants(smoke)))
    assert {o.verdict for o in a.outcomes} == {"not judged"}
    assert math.isnan(a.value("engines.first_loss.lvmthin-c64k").low)
    results = a.derived_values()
    used = macros.keys_used([ROOT / "paper" / "sections" / "engines.tex"])
    # the section's numbers come from this analysis; its verdicts through the claims (claim.<id>.*, by render)
    ours = {k: f for k, f in used.items() if k.startswith("engines.")}
    # ... and sentences that read the values through a generated clause (paper.clause.*, snaptax.paper.clauses)
    assert ours and set(used) - set(ours) <= {f"claim.{o.claim.id}.{part}" for o in a.outcomes
                                              for part in ("published", "where", "verdict")} | \
        {"paper.clause.engines_qcow2"}
    macros.check_available(ours, results.values)
    back = values.DerivedValues.from_json(results.to_json())
    assert back.values["engines.bytes_per_first_write_kib.cofw-p8k"].value == pytest.approx(20.0)
    assert back.values["engines.run.id"].text == a.record.run_id
    assert [c["verdict"] for c in back.claims] == ["not judged", "not judged"]
    table = a.summary_table()
    assert list(table.variant)[:3] == ["qcow2-c4k", "qcow2-c64k", "qcow2-c2m"]     # family, then grain
    assert table.set_index("variant").at["cofw-p8k", "bytes_per_first_write_kib"] == pytest.approx(20.0)


def test_claim_variant_cycles_without_reads_or_first_write_still_count(tmp_path):
    a = make_run(tmp_path, claim_plan=True, noise=0.1)
    cycles, first = planmod.CLAIM_CYCLES["quick"], planmod.CLAIM_FIRST_CYCLES["quick"]
    assert (a.cycles.variant == planmod.CLAIM_VARIANT).sum() == cycles
    steady = a.value(f"engines.steady_loss.{planmod.CLAIM_VARIANT}")
    assert steady.n == cycles and steady.value == pytest.approx(10.0, abs=1e-6)      # 900 against 1000
    first_loss = a.value(f"engines.first_loss.{planmod.CLAIM_VARIANT}")
    assert first_loss.n == first and 40.0 < first_loss.value < 60.0                  # 500 ± 10 % against 1000
    reads = a.value(f"engines.snap_read_ratio.{planmod.CLAIM_VARIANT}")
    assert reads.n == profiles.get("quick").repeats and reads.value == pytest.approx(0.8)
    # how many cycles each variant's ratios rest on: the long variants' own, the others the profile's repeats
    for name in planmod.LONG_VARIANTS:
        counted = tuple(a.value(f"engines.{key}.{name}").value for key in ("variant_cycles", "variant_first_cycles"))
        assert counted == (cycles, first), name
    assert a.value("engines.variant_cycles.qcow2-c64k").value == profiles.get("quick").repeats
    assert a.value("engines.bytes_per_first_write_kib.lvmthin-c64k").value == pytest.approx(132.0)
