"""Deterministic unit tests of the drive model (no real time, no daemons)."""
import dataclasses
import math

import pytest

from snaptax.errors import ConfigError
from snaptax.spindle.arrays import Raid5, Simulator, Tier
from snaptax.spindle.model import Disk, Geometry, Op, fit_seek_curve
from snaptax.spindle.predict import Region, closed_loop, closed_loop_mix
from snaptax.spindle.profiles import DiskSpec, Raid1Spec, Raid5Spec, SeekSpec, TierSpec, spec_from_json, to_json
from snaptax.spindle.rigfiles import load_profile, parse_device, profile_names

GiB = 1 << 30


@pytest.fixture(scope="module")
def p10k():
    return load_profile("sas10k")


def test_profiles_load_and_cite_sources():
    names = profile_names()
    assert {"sas10k", "sas15k", "nlsas7k2", "ssd_sas", "zero"} <= set(names)
    for n in names:
        p = load_profile(n)
        if n != "zero":
            assert p.source, n


def test_derived_cylinders_match_datasheet(p10k):
    # Savvio 10K.4 manual: 147,620 tracks per surface; derived from capacity, heads, rate and rpm
    assert p10k.cylinders == pytest.approx(147_620, rel=0.01)


@pytest.mark.parametrize("name", ["sas10k", "sas15k", "nlsas7k2"])
def test_seek_curve_passes_through_datasheet_figures(name):
    p = load_profile(name)
    for spec in (p.seek_read, p.seek_write):
        c = fit_seek_curve(spec, p.cylinders, p.short_seek_fraction)
        assert c.ms(1) == pytest.approx(spec.track_to_track_ms, abs=1e-9)
        assert c.ms(p.cylinders) == pytest.approx(spec.full_stroke_ms, abs=1e-9)
        assert c.mean_ms() == pytest.approx(spec.average_ms, rel=1e-3)
        # continuous at the boundary, increasing, concave short piece
        assert c.a + c.b * math.sqrt(c.d_b) == pytest.approx(c.c + c.e * c.d_b, rel=1e-9)
        ds = [1, 10, 100, 1000, 10_000, c.d_b * 0.999, c.d_b * 1.001, p.cylinders]
        ts = [c.ms(d) for d in ds]
        assert ts == sorted(ts)
        assert c.ms(0) == 0.0


def test_bad_seek_figures_name_the_field(p10k):
    bad = dataclasses.replace(p10k, seek_read=SeekSpec(0.3, 7.9, 7.81))
    with pytest.raises(ConfigError, match="seek_read"):
        spec_from_json(to_json(DiskSpec(bad)))


def test_geometry_zoned_and_sequential_angle_continuity(p10k):
    g = Geometry(p10k, GiB)
    assert g.x_of(0) == 0 and g.x_of(GiB) == pytest.approx(1.0)
    # outer LBAs are denser in stroke terms: the first half of the LBAs uses less than half the stroke
    assert g.x_of(GiB / 2) < 0.5
    assert g.rate_bytes_s(0, p10k) > g.rate_bytes_s(1, p10k)
    assert g.lba_of_x(g.x_of(123_456_789)) == pytest.approx(123_456_789, rel=1e-9)
    # streaming 4 KiB advances the angle by exactly the time it takes: no rotation lost between blocks
    x0, x1 = g.x_of(10 * 4096), g.x_of(11 * 4096)
    dt = g.stream_s(x0, x1)
    assert (g.angle(x1) - g.angle(x0)) % 1 == pytest.approx(dt / g.t_rev, abs=1e-9)


def _run(disk, ops_at):
    """Submit (t, lba, n, write) commands, run to the end, return completion times in submit order."""
    done = {}
    for i, (t, lba, n, w) in enumerate(ops_at):
        while disk.next_time() is not None and disk.next_time() <= t:
            disk.fire(disk.next_time())
        disk.submit(Op(lba, n, w, lambda tt, i=i: done.__setitem__(i, tt)), t)
    while disk.next_time() is not None:
        disk.fire(disk.next_time())
    return [done[i] for i in range(len(ops_at))]


def test_queued_sequential_reads_do_not_pay_a_rotation(p10k):
    disk = Disk(dataclasses.replace(p10k, readahead_bytes=0), GiB, "d")
    n = 64
    times = _run(disk, [(0.0, 100 * GiB // 1024 + i * 4096, 4096, False) for i in range(n)])
    per_block = (times[-1] - times[0]) / (n - 1)
    g = disk.geo
    assert per_block == pytest.approx(g.stream_s(0, g.x_of(4096)), rel=0.2)   # media rate, ~30 µs
    assert per_block < g.t_rev / 20


def test_qd1_sequential_reads_are_served_by_readahead(p10k):
    disk = Disk(p10k, GiB, "d")
    t, lat = 0.0, []
    for i in range(50):
        (end,) = _run(disk, [(t, i * 4096, 4096, False)])
        lat.append(end - t)
        t = end + 100e-6          # the host needs 100 µs to send the next command
    assert max(lat[1:]) < 0.5e-3  # no rotational miss (a miss would cost ~6 ms)
    assert disk.counters.cache_hits >= 40


def test_readahead_buffer_holds_one_segment_ahead_of_the_reader(p10k):
    # A long sequential stream (like a volume's fill), then the head leaves for a write far away. A drive's
    # segment holds what it read ahead of the last read before the head left, not everything since the stream
    # began, and a hit on a left-behind segment does not make the drive read further.
    disk = Disk(p10k, GiB, "d")
    t = 0.0
    for i in range(400):                                    # 400 x 32 KiB = 12.5 MiB, streamed
        (t,) = _run(disk, [(t + 100e-6, i * 32768, 32768, False)])
    (t,) = _run(disk, [(t, GiB // 2, 32768, True)])          # the head leaves
    streamed_hits = disk.counters.cache_hits
    assert streamed_hits >= 390
    # reads behind the reader (inside the streamed range) are not in the buffer
    for i in (10, 100, 200, 390):
        (t,) = _run(disk, [(t, i * 32768, 32768, False)])
    assert disk.counters.cache_hits == streamed_hits
    # from a new stream's segment, each hit serves only what the drive read before the head left
    (t,) = _run(disk, [(t, GiB // 4, 32768, False)])          # a new stream begins
    (t,) = _run(disk, [(t, GiB // 2 + 65536, 32768, True)])   # the head leaves at once: nothing read ahead
    (t,) = _run(disk, [(t, GiB // 4 + 32768, 32768, False)])  # the next block: a media read, not a hit
    assert disk.counters.cache_hits == streamed_hits


def test_qd1_random_read_matches_datasheet_access_time(p10k):
    r = closed_loop(DiskSpec(p10k), GiB, iodepth=1, ios=3000, span=1.0)
    g = Geometry(p10k, GiB)
    # datasheet: overhead + average seek + half a revolution + transfer of 4 KiB
    expect = p10k.overhead_ms / 1e3 + p10k.seek_read.average_ms / 1e3 + g.t_rev / 2 + 4096 / p10k.mean_rate_bytes_s
    assert r.mean_latency_s == pytest.approx(expect, rel=0.05)


def test_reordering_raises_iops_with_queue_depth(p10k):
    iops = [closed_loop(DiskSpec(p10k), GiB, iodepth=q, ios=1500, seed=3).iops for q in (1, 4, 16, 32)]
    assert iops == sorted(iops)
    assert iops[-1] > 2.2 * iops[0]
    fifo = closed_loop(DiskSpec(dataclasses.replace(p10k, scheduler="fifo")), GiB, iodepth=32, ios=1500, seed=3).iops
    assert fifo == pytest.approx(iops[0], rel=0.1)     # no reordering: queue depth buys nothing


def test_a_layout_of_regions_generalises_the_single_span_loop(p10k):
    one = closed_loop(DiskSpec(p10k), GiB, iodepth=4, ios=800, span=0.25, seed=5)
    same = closed_loop_mix(DiskSpec(p10k), GiB, iodepth=4, ios=800, regions=[Region(0, GiB // 4)], seed=5)
    assert same.iops == one.iops                 # the same random numbers: closed_loop is this function
    # half the commands at the far end of the stroke: long seeks between the two regions cost IOPS
    apart = closed_loop_mix(DiskSpec(p10k), GiB, iodepth=4, ios=800, seed=5,
                            regions=[Region(0, GiB // 64, 0.5), Region(GiB - GiB // 64, GiB // 64, 0.5)])
    near = closed_loop_mix(DiskSpec(p10k), GiB, iodepth=4, ios=800, seed=5,
                           regions=[Region(0, GiB // 64, 0.5), Region(GiB // 64, GiB // 64, 0.5)])
    assert apart.iops < 0.8 * near.iops
    # a region of weight 0 is never used: the layout is the other region's alone
    unused = closed_loop_mix(DiskSpec(p10k), GiB, iodepth=4, ios=800, seed=5,
                             regions=[Region(0, GiB // 64, 1.0), Region(GiB - GiB // 64, GiB // 64, 0.0)])
    alone = closed_loop_mix(DiskSpec(p10k), GiB, iodepth=4, ios=800, seed=5, regions=[Region(0, GiB // 64)])
    assert unused.iops == pytest.approx(alone.iops, rel=0.1)
    # writes (a read share below 1) cost what the drive's write path costs: a mix lies between the two
    r, w, mix = (closed_loop_mix(DiskSpec(p10k), GiB, iodepth=1, ios=800, seed=5, regions=[Region(0, GiB)],
                                 read_fraction=f).iops for f in (1.0, 0.0, 0.5))
    assert min(r, w) * 0.9 < mix < max(r, w) * 1.1
    for bad in ([], [Region(0, 100)], [Region(0, GiB, 0.0)]):
        with pytest.raises(ValueError, match="regions"):
            closed_loop_mix(DiskSpec(p10k), GiB, iodepth=1, regions=bad)
    with pytest.raises(ValueError, match="read_fraction"):
        closed_loop_mix(DiskSpec(p10k), GiB, iodepth=1, regions=[Region(0, GiB)], read_fraction=1.5)


def test_shorter_span_gives_more_iops(p10k):
    full = closed_loop(DiskSpec(p10k), GiB, iodepth=1, ios=1500, span=1.0).iops
    short = closed_loop(DiskSpec(p10k), GiB, iodepth=1, ios=1500, span=0.01).iops
    assert short > 1.3 * full


def test_write_cache_acknowledges_early_and_flush_waits(p10k):
    cached = dataclasses.replace(p10k, write_cache=True)
    sim = Simulator(DiskSpec(cached), GiB)
    sim.submit("w", "write", 500 << 20, 4096, 0.0)
    (tok, t_ack), = sim.advance(1.0) or [("none", 0)]
    assert tok == "w" and t_ack < 0.5e-3
    sim2 = Simulator(DiskSpec(cached), GiB)
    for i in range(8):
        sim2.submit(i, "write", (i * 97 % 256) << 22, 4096, 0.0)
    sim2.submit("f", "flush", 0, 0, 0.0)
    done = dict(sim2.advance(10.0))
    assert done["f"] > max(done[i] for i in range(8)) + 5e-3   # the flush waited for the destage


def test_a_flush_with_nothing_dirty_completes_after_its_overhead_not_at_once(p10k):
    # the drive answers a flush with an empty cache after its command overhead: the simulator must not report
    # that completion before simulated time reaches it (an early reply: a negative release lateness in the plugin)
    sim = Simulator(Raid1Spec((DiskSpec(p10k), DiskSpec(p10k))), GiB)
    sim.advance(1.0)
    sim.submit("f", "flush", 0, 0, 1.0)
    t_done = 1.0 + p10k.overhead_ms / 1e3
    assert sim.take_done() == [] and sim.etas["f"] == pytest.approx(t_done) and sim.sleep_etas == {"f"}
    assert sim.take_etas() == ["f"] and sim.next_event_time() == pytest.approx(t_done)
    assert sim.advance(t_done - 1e-6) == []
    assert sim.advance(t_done) == [("f", pytest.approx(t_done))] and "f" not in sim.etas and not sim.sleep_etas
    assert sim.next_event_time() is None and sim.counters()["array"]["latency_s_sum"] == pytest.approx(t_done - 1.0)


@pytest.mark.parametrize("destage_ends_first", [True, False])
def test_a_flush_on_a_mirror_with_one_drive_destaging_completes_with_the_later(p10k, destage_ends_first):
    """The whole flush completes when its last member does. One drive answers after its overhead, an event of its
    own; the other, with a write cached, when its destage ends. When the destage ends first, the whole's time is
    then fixed (the other drive's answer): it is told then, timed by sleeping, and it is exactly the time the
    simulator completes the flush at. When the other drive answers first, the flush completes as the destage
    ends, and nothing is told (there is nothing ahead to time)."""
    cached = DiskSpec(dataclasses.replace(p10k, write_cache=True))
    sim = Simulator(Raid1Spec((DiskSpec(p10k), cached)), GiB)
    sim.etas = told = _RecordedEtas()
    overhead = p10k.overhead_ms / 1e3
    sim.submit("w", "write", 0, 4096, 0.0)   # acknowledged by the cache of one, written by the other
    done = dict(sim.advance(0.0))
    destaging = sim.members[1]
    while destaging.current is None or not destaging.current.destage:
        done.update(sim.advance(sim.next_event_time()))
    t_destaged = destaging.busy_until
    # the destage ends half an overhead after the flush arrives, or two overheads after
    t_flush = t_destaged - (overhead / 2 if destage_ends_first else 2 * overhead)
    done.update(sim.advance(t_flush))
    assert destaging.current is not None and destaging.current.destage
    sim.submit("f", "flush", 0, 0, t_flush)
    assert "f" not in sim.etas and sim.members[0].flush_acks[0][0] == pytest.approx(t_flush + overhead)
    if destage_ends_first:
        done.update(sim.advance(t_destaged))
        assert sim.etas["f"] == pytest.approx(t_flush + overhead) and sim.sleep_etas == {"f"} and "f" not in done
        done.update(sim.advance(t_flush + 1.0))
        assert done["f"] == told.told["f"] == t_flush + overhead
    else:
        done.update(sim.advance(t_flush + overhead))
        assert "f" not in done and "f" not in sim.etas
        done.update(sim.advance(t_flush + 1.0))
        assert done["f"] == t_destaged and "f" not in told.told
    assert not sim.sleep_etas and not sim.etas


def test_a_drive_without_overhead_answers_a_flush_at_once(p10k):
    sim = Simulator(DiskSpec(dataclasses.replace(p10k, overhead_ms=0.0)), GiB)
    sim.advance(1.0)
    sim.submit("f", "flush", 0, 0, 1.0)
    assert sim.take_done() == [("f", 1.0)] and not sim.etas and not sim.sleep_etas


class _RecordedEtas(dict):
    """Simulator.etas that remembers every completion time it was told (a completed command leaves etas)."""

    def __init__(self):
        super().__init__()
        self.told: dict = {}

    def __setitem__(self, token, t_done):
        self.told[token] = t_done
        super().__setitem__(token, t_done)


@pytest.mark.parametrize("spec", ["raid1", "raid5", "raid5-cached", "raid5-small-cache"])
def test_an_array_commands_eta_is_its_completion_time(p10k, spec):
    """A RAID1 write and RAID5 reads and writes (read-modify-write, full rows, several rows) report their completion
    time as soon as the member commands that end them are dispatched (the emulator's thread then times its reply
    itself): every command is told one, and it is exactly when the simulator completes it."""
    import random
    # a 256 KiB cache fills: cached writes wait for a destage before they are accepted (and told their time)
    cache = {"raid5-cached": {"write_cache": True}, "raid5-small-cache": {"write_cache": True,
                                                                       "write_cache_bytes": 256 << 10}}
    disk = DiskSpec(dataclasses.replace(p10k, **cache.get(spec, {})))
    su = 64 << 10
    sim = Simulator(Raid1Spec((disk, disk)) if spec == "raid1" else Raid5Spec(tuple([disk] * 6), su), GiB)
    sim.etas = told = _RecordedEtas()
    rng = random.Random(4)
    done: dict[int, float] = {}
    t = 0.0
    blocked = 0
    for token in range(400):
        t += rng.expovariate(1 / 2e-3)   # ~500 commands/s: queues build up on the members
        done.update(sim.advance(t))
        blocked = max([blocked] + [len(getattr(m, "blocked", ())) for m in sim.members])
        write = rng.random() < 0.7
        length = rng.choice((4096, 8192, 64 << 10, 5 * su, 7 * su))
        sim.submit(token, "write" if write else "read", rng.randrange(0, GiB - length, 4096), length, t)
    done.update(sim.advance(t + 10.0))
    assert len(done) == 400 and not sim.etas
    assert {tok: told.told.get(tok) for tok in done} == done
    assert (blocked > 0) == (spec == "raid5-small-cache"), blocked
    if spec != "raid1":
        assert sim.counters()["array"]["rmw_rows"] > 50 and sim.counters()["array"]["full_stripe_rows"] > 20


def test_raid1_writes_both_reads_one(p10k):
    sim = Simulator(Raid1Spec((DiskSpec(p10k), DiskSpec(p10k))), GiB)
    sim.submit(1, "write", 4096, 4096, 0.0)
    sim.advance(1.0)
    m = sim.counters()["members"]
    assert [x["writes"] for x in m] == [1, 1]
    for i in range(40):
        sim.submit(10 + i, "read", (i * 7919 % 4096) * 4096 * 64, 4096, 1.0)
    sim.advance(5.0)
    reads = [x["reads"] for x in sim.counters()["members"]]
    assert sum(reads) == 40 and min(reads) >= 10   # both mirrors serve reads when there is a queue


def test_raid1_read_placement_does_not_integrate_the_seek_curve_per_command(p10k, monkeypatch):
    # the emulator places a mirrored read under its lock at the command's arrival: integrating the seek curve
    # there (~0.7 ms of CPU per member) made every raid1 read late to its own schedule (issue 9)
    from snaptax.spindle import model
    calls = []
    real = model.SeekCurve.mean_ms
    monkeypatch.setattr(model.SeekCurve, "mean_ms", lambda self, span=1.0: calls.append(span) or real(self, span))
    sim = Simulator(Raid1Spec((DiskSpec(p10k), DiskSpec(p10k))), GiB)
    built = len(calls)
    for i in range(50):
        sim.submit(i, "read", (i * 7919 % 4096) * 4096 * 64, 4096, i * 1e-3)
        sim.advance(i * 1e-3)
    assert len(calls) == built


def test_raid1_read_beats_single_disk_at_depth(p10k):
    one = closed_loop(DiskSpec(p10k), GiB, iodepth=16, ios=1500).iops
    two = closed_loop(Raid1Spec((DiskSpec(p10k), DiskSpec(p10k))), GiB, iodepth=16, ios=1500).iops
    assert two > 1.5 * one


def test_raid5_mapping_left_symmetric(p10k):
    v = Raid5(Raid5Spec(tuple([DiskSpec(p10k)] * 4), 64 << 10), GiB, "r5")
    assert [v.parity_member(r) for r in range(5)] == [3, 2, 1, 0, 3]
    rows = v.map(0, 3 * (64 << 10))
    assert list(rows) == [0] and [c.member for c in rows[0]] == [0, 1, 2]
    rows = v.map(3 * (64 << 10) + 4096, 4096)          # row 1: parity on member 2, data starts on member 3
    assert rows == {1: [type(rows[1][0])(3, (64 << 10) + 4096, 4096)]}
    # every byte of the space maps to exactly one place
    seen = set()
    for off in range(0, 12 * (64 << 10), 64 << 10):
        (row, chunks), = v.map(off, 64 << 10).items()
        seen.add((chunks[0].member, chunks[0].lba))
    assert len(seen) == 12


def test_raid5_small_write_is_read_modify_write(p10k):
    sim = Simulator(Raid5Spec(tuple([DiskSpec(p10k)] * 6), 64 << 10), GiB)
    sim.submit(1, "write", 12345 * 4096, 4096, 0.0)
    sim.advance(1.0)
    c = sim.counters()
    assert sum(m["reads"] for m in c["members"]) == 2 and sum(m["writes"] for m in c["members"]) == 2
    assert c["array"]["rmw_rows"] == 1
    sim.submit(2, "write", 5 * (64 << 10) * 10, 5 * (64 << 10), 1.0)   # one full row: no reads
    sim.advance(2.0)
    c = sim.counters()
    assert sum(m["reads"] for m in c["members"]) == 2 and sum(m["writes"] for m in c["members"]) == 2 + 6
    assert c["array"]["full_stripe_rows"] == 1


def test_raid5_small_random_writes_cost_about_four_ios(p10k):
    spec = Raid5Spec(tuple([DiskSpec(p10k)] * 6), 64 << 10)
    r = closed_loop(spec, 4 * GiB, iodepth=16, ios=800, write=True)
    rr = closed_loop(spec, 4 * GiB, iodepth=16, ios=800, write=False)
    assert rr.iops > 2.5 * r.iops


def _tier(cycle=1.0, new="hdd"):
    ssd = load_profile("ssd_sas")
    hdd = load_profile("sas10k")
    return TierSpec(ssd=DiskSpec(ssd), hdd=DiskSpec(hdd), extent_bytes=4 << 20, ssd_fraction=0.25, cycle_s=cycle,
                    window_cycles=2, max_migrations_per_cycle=8, migration_chunk_bytes=1 << 20, new_allocation=new)


def test_tier_new_allocations_land_on_hdd_and_hot_extents_get_promoted():
    sim = Simulator(_tier(), 64 << 20)   # 16 extents of 4 MiB, 4 SSD slots
    tier = sim.volume
    assert isinstance(tier, Tier)
    t = 0.0
    for e in range(16):                  # write every extent once: all on HDD
        sim.submit(("w", e), "write", e * (4 << 20), 4096, t)
        t += 0.02
        sim.advance(t)
    assert all(tier.location(e * (4 << 20)) == "hdd" for e in range(16))
    hot = [3, 7]
    for i in range(200):                 # hammer two extents
        e = hot[i % 2]
        sim.advance(t)
        sim.submit(("r", i), "read", e * (4 << 20) + (i % 50) * 4096, 4096, t)
        t += 0.01
    sim.advance(t + 3.0)                 # cycle ends, migrations run through the members
    assert [tier.location(e * (4 << 20)) for e in hot] == ["ssd", "ssd"]
    c = sim.counters()["array"]
    # free SSD slots are filled by the warmest extents too (heat 1 from the initial writes)
    assert c["promotions"] >= 2 and c["migrated_bytes"] == c["promotions"] * (4 << 20)
    ssd_member = sim.counters()["members"][0]
    assert ssd_member["bytes_written"] >= c["migrated_bytes"]      # migration really wrote to the SSD
    assert not c["migration_running"]


def test_tier_new_extent_goes_to_hdd_while_ssd_has_room():
    sim = Simulator(_tier(), 64 << 20)
    sim.submit("w", "write", 5 * (4 << 20), 4096, 0.0)
    sim.advance(0.1)
    assert sim.volume.location(5 * (4 << 20)) == "hdd" and len(sim.volume.free["ssd"]) == 4
    assert sim.volume.location(6 * (4 << 20)) is None


def test_tier_demotes_cold_extent_when_ssd_full():
    sim = Simulator(_tier(new="ssd"), 64 << 20)
    tier = sim.volume
    t = 0.0
    for e in range(16):
        sim.submit(e, "write", e * (4 << 20), 4096, t)
        t += 0.02
        sim.advance(t)
    assert sum(1 for e in range(16) if tier.location(e * (4 << 20)) == "ssd") == 4   # ssd filled first
    for i in range(100):
        sim.advance(t)
        sim.submit(("r", i), "read", 10 * (4 << 20) + (i % 20) * 4096, 4096, t)
        t += 0.01
    sim.advance(t + 3.0)
    assert tier.location(10 * (4 << 20)) == "ssd"
    assert sim.counters()["array"]["demotions"] >= 1


def test_parse_device_names_bad_field():
    with pytest.raises(ConfigError, match=r"spindle\.members"):
        parse_device({"kind": "raid5", "profile": "sas15k", "members": 2}, "rig.yaml")
    with pytest.raises(ConfigError, match=r"field 'profile'.*no drive profile 'nope'"):
        parse_device({"kind": "disk", "profile": "nope"}, "rig.yaml")
    with pytest.raises(ConfigError, match=r"spindle\.bogus"):
        parse_device({"kind": "disk", "profile": "sas10k", "bogus": 1}, "rig.yaml")
    with pytest.raises(ConfigError, match=r"overrides\.rpm"):
        parse_device({"kind": "disk", "profile": "sas10k", "overrides": {"rpm": 1}}, "rig.yaml")


def test_named_devices_parse_and_round_trip():
    for name in ("raid1_10k", "raid5_15k_6", "sas_pool", "tier_pool"):
        spec = parse_device({"device": name}, "rig.yaml")
        assert spec_from_json(to_json(spec)) == spec


def test_simulator_is_deterministic(p10k):
    a = closed_loop(DiskSpec(p10k), GiB, iodepth=8, ios=500, seed=5)
    b = closed_loop(DiskSpec(p10k), GiB, iodepth=8, ios=500, seed=5)
    assert a == b


def test_placement_cost_bench_names_every_device(spindle_core):
    from snaptax.bench.spindle import placement_cost
    from snaptax.spindle.rigfiles import named_devices
    out = placement_cost(commands=20, c_library=spindle_core)
    assert set(out) == {f"emulator_place_us_{c}{n}" for n in named_devices() for c in ("", "c_")}
    assert all(math.isfinite(v) and v >= 0 for v in out.values())
