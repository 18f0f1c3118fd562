"""The calibration study: plan, per-request fit on simulated traces, wiring (fast); a smoke run (integration)."""
import numpy as np
import pytest

from snaptax import profiles, render, studies
from snaptax.spindle.predict import qd1_trace
from snaptax.spindle.rigfiles import disk, load_profile
from snaptax.studies import calibration as cal

GiB = 1 << 30


def test_registered_and_plan_is_deterministic():
    assert studies.get("calibration") is cal
    assert cal.STUDY in [r.study for r in render.renderers()]
    text = cal.describe_plan(profiles.get("smoke"))
    assert text == cal.describe_plan(profiles.get("smoke"))
    assert "sas10k" in text and "reads double" in text
    assert cal.drive_profiles() == ["nlsas7k2", "sas10k", "sas15k"]


def test_span_job_logs_offsets():
    job = cal.span_job(0.01, 3)
    assert dict(job.options())["iodepth"] == "1"
    assert ("log_offset", "1") in job.options() and ("write_lat_log", "req") in job.options()


@pytest.mark.parametrize("name", ["sas10k", "nlsas7k2"])
def test_request_fit_recovers_configured_figures(name):
    p = load_profile(name)
    rng = np.random.default_rng(5)
    traces = []
    for span, n in ((0.003, 1500), (0.01, 1500), (0.1, 1000), (1.0, 1500)):
        off, svc = qd1_trace(disk(name), GiB, n=n, span=span, gap_s=250e-6, jitter_s=20e-6, seed=int(span * 100))
        lat = np.array(svc) + 150e-6 + rng.normal(0, 10e-6, n)
        traces.append(cal.Trace(np.array(off), lat, 250e-6, 150e-6, span))
    fit = cal.fit_seek_requests(traces, p, GiB)
    errs = fit.rel_errors(p.seek_read)
    assert max(errs.values()) < 0.05, errs
    for k, ci in zip(("track_to_track_ms", "average_ms", "full_stroke_ms"), fit.ci95_ms):
        assert abs(getattr(fit, k) - getattr(p.seek_read, k)) < 3 * ci + 1e-9, k


def test_request_fit_detects_a_wrong_turnaround():
    # telling the fit the turnaround is 100 µs longer than it was moves the short-seek figure by about that much
    p = load_profile("sas10k")
    off, svc = qd1_trace(disk("sas10k"), GiB, n=3000, span=0.01, gap_s=200e-6, jitter_s=10e-6)
    off2, svc2 = qd1_trace(disk("sas10k"), GiB, n=2000, span=1.0, gap_s=200e-6, jitter_s=10e-6, seed=2)
    good = [cal.Trace(np.array(off), np.array(svc), 200e-6), cal.Trace(np.array(off2), np.array(svc2), 200e-6)]
    bad = [cal.Trace(t.offsets, t.clat_s, 300e-6) for t in good]
    t_good = cal.fit_seek_requests(good, p, GiB).track_to_track_ms
    t_bad = cal.fit_seek_requests(bad, p, GiB).track_to_track_ms
    assert abs(t_good - 0.30) < 0.015 and t_bad < t_good - 0.05


def test_phase_from_counter_histograms():
    before = {"emulator": {"idle_phase_bin_us": 2.0, "idle_phase_hist": [0] * 200}}
    hist = [0] * 200
    hist[100] = 10   # 200-202 µs
    hist[10] = 3
    after = {"emulator": {"idle_phase_bin_us": 2.0, "idle_phase_hist": hist}}
    assert cal.phase_from_counters(before, after) == pytest.approx(201e-6)


@pytest.mark.integration
def test_smoke_run_publishes_and_renders(data_dir, work_dir, tmp_path):
    import shutil
    if not (shutil.which("nbdkit") and shutil.which("fio") and shutil.which("qemu-storage-daemon")):
        pytest.skip("needs nbdkit, fio, qemu-storage-daemon")
    run = cal.run("local", "smoke")
    assert (run / "manifest.json").is_file()
    rd = cal.reads_double_table(run)
    snap = rd[rd.phase == "snapshot"].host_reads_per_vm_read.median()
    none = rd[rd.phase == "none"].host_reads_per_vm_read.median()
    assert none == pytest.approx(1.0, abs=0.05) and snap > 1.5
    assert list((run / "measurements").glob("sas10k/*span*/req_clat*.log"))
    outs = cal.render(run, tmp_path / "fig", tmp_path / "gen")
    assert outs and outs[0].claim.cite == "zandboer"
    assert (tmp_path / "fig" / "calibration-span.pdf").is_file()
    assert "stCalFitWorstErrPct" in (tmp_path / "gen" / "calibration.tex").read_text()
