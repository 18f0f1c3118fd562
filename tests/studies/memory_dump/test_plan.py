"""The memory-dump plan: the page-walker job, the grid with the seed's two settings, interleaved repeats, the
scales per profile and their budgets, and refusal of impossible settings."""
import pytest

from snaptax import profiles
from snaptax.errors import ConfigError
from snaptax.guest import memsnap
from snaptax.models import memory_dump as md
from snaptax.plan import split_replicate
from snaptax.studies import get
from snaptax.studies.memory_dump import plan as planmod
from tests.parameters import assert_missing_is_named, assert_round_trip, committed_parameters

MiB, GiB = 1 << 20, 1 << 30


def test_walker_job_is_the_seeds_page_walker():
    job = planmod.walker_job(planmod.DEFAULT, 256 * MiB)
    opts = dict(job.options())
    assert opts["rw"] == "write" and opts["bs"] == str(64 * 4096) and opts["iodepth"] == "1"
    assert opts["direct"] == "1" and opts["size"] == "256M" and "time_based" not in opts and "runtime" not in opts
    assert opts["thinktime"] == "25000" and opts["thinktime_blocks"] == "1"      # µs, after every write
    assert planmod.point_of(job) == planmod.DEFAULT
    assert dict(planmod.walker_job(md.WalkerPoint(2048, 0), 16 * MiB).options())["thinktime"] == "0"


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_each_pass_is_a_replicate_on_both_devices_then_the_claims_points_alone(name):
    p = profiles.get(name)
    s = planmod.scale(p)
    study = planmod.build_plan(p)
    names = [v.variant for v in study.variants]
    assert names[:2] == ["ssd", "raid1_10k"] and len(set(names)) == len(names)
    assert [split_replicate(n) for n in names] == [(role, r) for r in range(s.repeats) for role in planmod.ROLES] + [
        ("raid1_10k", s.repeats + i) for i in range(s.extra_replicates)]
    # per pass: the grid and the tuned point's further repeats; on the array also the tuned point over half the
    # memory and the overlapped walker at the seed's two points; the extra replicates have no overlapped walker
    assert study.points() == (2 * s.repeats * (16 + s.tuned_repeats - 1) + 3 * s.repeats
                              + s.extra_replicates * (1 + s.tuned_repeats + 1))
    for v in study.variants:
        every = [m for _, m, _ in v.plan.measurements()]
        half, overlap = ([m for m in every if m.phase == phase] for phase in (planmod.HALF_PHASE,
                                                                                 planmod.OVERLAP_PHASE))
        assert every == [m for m in every if m.phase == planmod.PHASE] + half + overlap
        role, replicate = split_replicate(v.variant)
        on_array, in_pass = role == planmod.SPINDLE, replicate < s.repeats
        assert [planmod.point_of(m.job) for m in overlap] == (
            [planmod.DEFAULT, planmod.TUNED] if on_array and in_pass else [])
        assert [(planmod.point_of(m.job), m.job.size) for m in half] == (
            [(planmod.TUNED, s.memory_bytes // 2)] if on_array else [])
    steps = [m for _, m, _ in study.variants[0].plan.measurements()]
    assert [m.repeat for m in steps] == [0] * 16 + list(range(1, s.tuned_repeats))
    assert all(planmod.point_of(m.job) == planmod.TUNED for m in steps[16:])
    assert sum(planmod.point_of(m.job) == planmod.TUNED for m in steps) == s.tuned_repeats
    assert {planmod.point_of(m.job) for m in steps} == set(s.points())
    assert planmod.DEFAULT in s.points() and planmod.TUNED in s.points()
    assert all(m.phase == "dump" and m.job.size == s.memory_bytes for m in steps)
    for v in study.variants[2 * s.repeats:]:      # the extra replicates: the seed's two settings only (no overlap)
        assert {planmod.point_of(m.job) for _, m, _ in v.plan.measurements()} == {planmod.DEFAULT, planmod.TUNED}
    assert study.fio_seconds() == 0       # sized, not timed
    if name != "smoke":                   # the claims' points rest on at least 3 replicates
        assert s.repeats + s.extra_replicates >= 3


def test_budgets():
    quick, smoke, full = (planmod.scale(profiles.get(n)) for n in ("quick", "smoke", "full"))
    assert full.memory_bytes == 4 * GiB and 128 * MiB <= quick.memory_bytes <= 512 * MiB
    assert quick.repeats >= 2
    # the overlapped walker on the mirror adds ~0.9 min to quick's 7 (issue 46.5; in the passes only), the
    # half-memory walker at the tuned setting ~0.05 (C003-5); quick as a whole stays under issue 49's 90 min
    # (docs/timings.md, the science plan §18)
    assert sum(planmod.estimated_seconds(profiles.get("quick")).values()) < 9.5 * 60
    assert sum(planmod.estimated_seconds(profiles.get("smoke")).values()) < 45
    # the waits alone are a lower bound of the estimate
    for n in ("smoke", "quick"):
        assert planmod.wait_seconds(profiles.get(n)) < sum(planmod.estimated_seconds(profiles.get(n)).values())


def test_describe_counts_come_from_the_plan():
    p = profiles.get("quick")
    text = planmod.describe(p)
    study = planmod.build_plan(p)
    est = planmod.estimated_seconds(p)
    assert f"{study.points()} fio runs in {len(study.variants)} replicates of the device roles" in text
    assert f"estimated {sum(est.values()):.0f} s" in text
    assert "default point p64-w25: 1024 writes of 256 KiB" in text
    assert get("memory_dump").describe_plan(p) == text


def test_scale_validation():
    with pytest.raises(ConfigError, match="'ioBlockPages'"):
        planmod.MemoryDumpScale(16 * MiB, 2, 2, block_pages=(0, 64, 2048))
    with pytest.raises(ConfigError, match="'ioWait'"):
        planmod.MemoryDumpScale(16 * MiB, 2, 2, waits_ms=(-2, 2, 25))
    with pytest.raises(ConfigError, match="'memory_bytes'"):
        planmod.MemoryDumpScale(5 * MiB, 2, 2)
    with pytest.raises(ConfigError, match="'block_pages'"):
        planmod.MemoryDumpScale(16 * MiB, 2, 2, block_pages=(64, 256))       # no tuned point
    with pytest.raises(ConfigError, match="'repeats'"):
        planmod.MemoryDumpScale(16 * MiB, 0, 0)
    with pytest.raises(ConfigError, match="'tuned_repeats'"):
        planmod.MemoryDumpScale(16 * MiB, 3, 0)
    with pytest.raises(ConfigError, match="'extra_replicates'"):
        planmod.MemoryDumpScale(16 * MiB, 3, 1, extra_replicates=-1)
    with pytest.raises(ConfigError, match="no memory-dump scale"):
        planmod.scale(profiles.Profile("huge", 1, 1, 0, 1 << 30))


# ------------------------------------------------------------------ the guest phase

def test_guest_dumps_interleave_background_and_precopy_at_implied_rates():
    p = profiles.get("quick")
    g = planmod.guest_scale(p)
    dumps = planmod.guest_dumps(p)
    per_pass = 1 + len(g.precopy_points)
    assert len(dumps) == g.repeats * per_pass
    assert [d.repeat for d in dumps] == [r for r in range(g.repeats) for _ in range(per_pass)]
    assert dumps[0].method == planmod.BACKGROUND and dumps[0].bandwidth_bytes_s is None
    assert dumps[0].label == "background"
    pre = dumps[1]
    assert pre.method == planmod.PRECOPY and pre.point == planmod.TUNED and pre.label == "precopy-p2048-w2"
    # B / (s0 + B/bw + w) with the ssd role's nominal service time
    s0, bw = planmod.NOMINAL["ssd"]
    b = planmod.TUNED.block_bytes
    assert pre.bandwidth_bytes_s == pytest.approx(b / (s0 + b / bw + 0.002))
    # the seed's default point implies ~9.5 MiB/s, the tuned one ~274 MiB/s on the nominal SSD
    assert planmod.implied_bandwidth(planmod.DEFAULT) / MiB == pytest.approx(9.5, abs=0.1)
    assert planmod.guest_parameters(p).scale == g


def test_guest_budgets():
    smoke, quick = (planmod.guest_estimated_seconds(profiles.get(n)) for n in ("smoke", "quick"))
    assert smoke < 45 and quick < 100
    # the whole study: smoke within 2 minutes (fio estimate plus the guest phase plus ~30 s of daemons)
    assert sum(planmod.estimated_seconds(profiles.get("smoke")).values()) + smoke < 90
    assert planmod.guest_scale(profiles.get("full")).memory_mib == 4096
    assert "guest phase: a 384 MiB TCG guest" in planmod.describe(profiles.get("smoke"))


def test_guest_plan_counts_the_fill(monkeypatch):
    # the 4 GiB guest fills 3480 MiB more than the small one: its boot is planned 21.75 s longer (measured 21.5 s);
    # smoke and quick (160 MiB filled) keep the small guest's 9 s
    full, quick = profiles.get("full"), profiles.get("quick")
    assert planmod.guest_scale(full).fill_mib - planmod.GUEST_BOOT_FILL_MIB == 3480
    assert planmod.guest_scale(quick).fill_mib == planmod.GUEST_BOOT_FILL_MIB
    full_s, quick_s = planmod.guest_estimated_seconds(full), planmod.guest_estimated_seconds(quick)
    monkeypatch.setattr(planmod, "GUEST_FILL_MIB_S", float("inf"))
    assert full_s - planmod.guest_estimated_seconds(full) == pytest.approx(3480 / 160.0)
    assert quick_s == planmod.guest_estimated_seconds(quick)


def test_guest_scale_validation():
    with pytest.raises(ConfigError, match="'memory_mib'"):
        planmod.GuestDumpScale(256, 2, (planmod.TUNED,))
    with pytest.raises(ConfigError, match="'repeats'"):
        planmod.GuestDumpScale(384, 1, (planmod.TUNED,))
    with pytest.raises(ConfigError, match="'precopy_points'"):
        planmod.GuestDumpScale(384, 2, (), background=False)
    with pytest.raises(ConfigError, match="no memory-dump guest scale"):
        planmod.guest_scale(profiles.Profile("huge", 1, 1, 0, 1 << 30))
    # an impossible walker point cannot even be named as a precopy point
    with pytest.raises(ConfigError, match="'ioBlockPages'"):
        planmod.GuestDumpScale(384, 2, (md.WalkerPoint(0, 2),))


@pytest.mark.parametrize("pages, wait", [(0, 25), (64, -2), (-64, 2), (64, float("nan"))])
def test_an_impossible_grid_point_is_refused_with_one_line(pages, wait):
    with pytest.raises(ConfigError) as exc:
        planmod.MemoryDumpScale(16 * MiB, 2, 2, block_pages=(pages, 64, 2048), waits_ms=(wait, 2, 25))
    assert "\n" not in str(exc.value) and ("ioBlockPages" in str(exc.value) or "ioWait" in str(exc.value))


def test_parameters_read_back_from_the_manifest_and_a_missing_key_is_named():
    params = planmod.parameters(profiles.get("quick"), {"ssd": "ssd", "raid1_10k": "raid1_10k"})
    assert_round_trip(params)
    assert_missing_is_named(params, "scale.tuned_repeats")     # inside the recorded MemoryDumpScale
    assert_missing_is_named(params, "guest.scale.precopy_points")


@pytest.mark.committed
def test_every_committed_run_s_parameters_load(monkeypatch):
    """(Runs older than the guest phase get guest = None from record.upgrade: tests/test_upgrade.py.)"""
    runs = committed_parameters(monkeypatch, "memory_dump", planmod.MemoryDumpParameters)
    assert runs and runs[max(runs)].guest is not None


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_parts_are_one_role_s_pass_each_then_the_guest_phase(name):
    """Measured in parts (issue 49.1): one part per device role and replicate (`<role>.r<i>`, the plan's order) on its
    own engine, then the guest phase alone; the parts' plans together are the whole plan, their planned times sum to
    the whole run's, and only the guest part (and a whole run) measures the guest phase."""
    p = profiles.get(name)
    whole = planmod.build_plan(p)
    parts = planmod.parts(p)
    assert parts == (*(f"{role}.r{r}" for role, r in (split_replicate(v.variant) for v in whole.variants)),
                     planmod.GUEST_PART)
    together = []
    for part in parts:
        study = planmod.build_plan(p, part=part)
        if part == planmod.GUEST_PART:
            assert study.variants == () and planmod.measures_guest(part)
            assert planmod.planned_seconds(p, part=part) == pytest.approx(planmod.guest_estimated_seconds(p))
            continue
        (v,) = study.variants
        assert v == whole.variant(v.variant) and not planmod.measures_guest(part)
        together += study.variants
    assert together == list(whole.variants) and planmod.measures_guest(None)
    assert sum(planmod.planned_seconds(p, part=part) for part in parts) == pytest.approx(planmod.planned_seconds(p))
    with pytest.raises(ConfigError, match="memory_dump study: field 'part': unknown part 'ssd.r9' \\(one of: ssd.r0"):
        planmod.build_plan(p, part="ssd.r9")


def test_a_full_part_fits_a_measuring_window():
    """At full the whole study plans about three hours, more than one measuring window (150 min, issue 49.1): each
    part plans at most 80 min (past runs took up to 1.1 times their plan)."""
    full = profiles.get("full")
    assert planmod.planned_seconds(full) > 150 * 60
    assert max(planmod.planned_seconds(full, part=part) for part in planmod.parts(full)) <= 80 * 60


def test_the_overlapped_walker_paces_one_block_per_wait_from_each_write_s_start():
    """fio waits for every write in flight before it thinks, so the overlapped walker (model `overlap`: the wait
    from each write's start) is paced by fio's rate limit at one block per wait, with no thinktime; its point reads
    back from its options; a point without a wait, or a rate that is no whole number of bytes/s, is refused."""
    job = planmod.overlap_job(planmod.DEFAULT, 256 * MiB)
    opts = dict(job.options())
    assert "thinktime" not in opts and opts["rate"] == str(64 * 4096 * 40)        # 256 KiB per 25 ms
    assert opts["iodepth"] == "1" and opts["rw"] == "write" and opts["size"] == "256M"
    assert planmod.point_of(job) == planmod.DEFAULT
    assert planmod.point_of(planmod.overlap_job(planmod.TUNED, 16 * MiB)) == planmod.TUNED
    with pytest.raises(ConfigError, match="field 'ioWait': must be > 0"):
        planmod.overlap_job(md.WalkerPoint(64, 0), 16 * MiB)
    with pytest.raises(ConfigError, match="not a whole number"):
        planmod.overlap_job(md.WalkerPoint(1, 3), 16 * MiB)
    # its planned time is the overlap model's: the waits where they are longer than the write
    p = profiles.get("quick")
    est = planmod.estimated_seconds(p, part="raid1_10k.r0")
    assert est["raid1_10k"] > 0


def test_the_skipping_walker_writes_the_memory_less_its_zero_share():
    """The skipping walker (issue 46.5): the grid's walker over (1 − z)·M rounded to whole blocks of the grid's largest
    (both points skip the same bytes), at the seed's two points once per replicate on the array (its passes and the
    extra ones), never on the ssd, only where a share is given; it adds its time to the plan; a share outside [0, 1)
    or one that leaves no whole block is refused in one line."""
    p = profiles.get("quick")
    s = planmod.scale(p)
    assert planmod.kept_bytes(256 * MiB, 0.36, 8 * MiB) == 160 * MiB       # 163.84 MiB → 20 blocks of 8 MiB
    assert planmod.kept_bytes(256 * MiB, 0.0, 8 * MiB) == 256 * MiB
    assert planmod.realised_zero_fraction(s, 0.36) == pytest.approx(0.375)
    job = planmod.skip_job(planmod.DEFAULT, s, 0.36)
    assert job.size == 160 * MiB and dict(job.options())["thinktime"] == "25000"
    assert planmod.point_of(job) == planmod.DEFAULT
    study = planmod.build_plan(p, zero_fraction=0.36)
    skipped = [(vp.variant, m.job.size) for vp in study.variants for _, m, _ in vp.plan.measurements()
               if m.phase == planmod.SKIP_PHASE]
    assert len(skipped) == 2 * (s.repeats + s.extra_replicates)
    assert {split_replicate(v)[0] for v, _ in skipped} == {planmod.SPINDLE} and {n for _, n in skipped} == {160 * MiB}
    assert not [m for vp in planmod.build_plan(p).variants for _, m, _ in vp.plan.measurements()
                if m.phase == planmod.SKIP_PHASE]
    assert planmod.planned_seconds(p, zero_fraction=0.36) > planmod.planned_seconds(p)
    for z, why in ((1.0, "is not in \\[0, 1\\)"), (-0.1, "is not in"), (0.99, "leaves no whole 8 MiB block")):
        with pytest.raises(ConfigError, match=f"skipping walker \\(checkpoint_walker\\): field 'zero_fraction': "
                           f"[-0-9.]+ {why}"):
            planmod.kept_bytes(256 * MiB, z, 8 * MiB)
    # at full each part with the skipping walker still fits a measuring window
    full = profiles.get("full")
    assert max(planmod.planned_seconds(full, part=part, zero_fraction=0.36) for part in planmod.parts(full)) <= 80 * 60


def test_on_a_rig_the_plan_predicts_what_the_run_plans(monkeypatch):
    """The study's prediction for a rig (the artifact table's, `snaptax plan`'s) is the one measure.setup records:
    with the skipping walker where the rig has the stand-in's inferred zero share, without it where not."""
    from snaptax import operatingpoints as op
    from snaptax.studies.memory_dump import measure

    p = profiles.get("quick")
    point = op.OperatingPoint(planmod.STAND_IN, 0.36, 0.35, 0.37, "memory_dump/r", "memory_dump.default_4gib")
    for points, z in (({planmod.STAND_IN: point}, 0.36), ({}, None)):
        monkeypatch.setattr(op, "read", lambda rig, points=points: points)
        assert measure.skip_point("x", planmod.scale(p))[0] == z
        assert get("memory_dump").planned_seconds(p, "x") == planmod.planned_seconds(p, zero_fraction=z)
    assert get("memory_dump").planned_seconds(p) == planmod.planned_seconds(p)


@pytest.mark.parametrize("profile", sorted(planmod.GUEST_SCALES))
def test_guest_fill_leaves_the_kernel_and_fio_their_room(profile):
    # measured on a 4 GiB TCG guest (science plan §20): the kernel kept 181 MiB and the system 148 beside the fill;
    # a fill leaving 340 MiB was killed by the OOM killer, one leaving 456 MiB (126 free) ran. A large guest still
    # fills most of its RAM.
    g = planmod.GUEST_SCALES[profile]
    if g.memory_mib == 4096:
        assert g.memory_mib - g.fill_mib >= 181 + 148 + 100
    assert g.fill_mib >= 0.85 * g.memory_mib or g.memory_mib == memsnap.SMALLEST_GUEST_MIB
