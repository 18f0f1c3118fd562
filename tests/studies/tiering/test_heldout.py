"""The misplacement model's held-out test on synthetic pools: phases that follow the model at their SSD-served
shares are predicted from the two initial phases alone; a phase slowed by something other than placement is not;
a pool that did not learn (no flash speed to infer) is untested."""
import numpy as np
import pandas as pd

from snaptax.models import heldout as ho, tiering as tm
from snaptax.studies.tiering.heldout import heldout_test, predicted_ratio

TAU_SSD, TAU_HDD = 150.0, 700.0
SHARES = {"initial": 1.0, "with": 0.45, "after": 0.6, "relearned": 1.0}
ENGINES = {"qcow2": ("sas", "tier")}


def pools(slow: dict[str, float] | None = None, noise: float = 0.01, seed: int = 0):
    rng = np.random.default_rng(seed)
    slow = slow or {}

    def batches(mean: float) -> np.ndarray:
        return mean * (1 + noise * rng.standard_normal(12))

    data = {("sas", "initial"): batches(1e6 / TAU_HDD)}
    for phase, p in SHARES.items():
        data[("tier", phase)] = batches(float(tm.iops(p, TAU_SSD, TAU_HDD)) * slow.get(phase, 1.0))
    phases = pd.DataFrame([{"pool": "tier", "phase": ph, "ssd_share": p} for ph, p in SHARES.items()]
                          + [{"pool": "sas", "phase": "initial", "ssd_share": 0.0}])
    return phases, lambda pool, phase: data.get((pool, phase), np.array([]))


def test_phases_that_follow_the_model_are_predicted():
    phases, samples = pools()
    h = heldout_test(phases, samples, ENGINES)
    assert h.verdict == ho.PREDICTS, h.reason
    assert [p.label for p in h.points] == ["qcow2 with", "qcow2 after", "qcow2 relearned"]
    with_point = h.points[0]
    assert abs(with_point.predicted - TAU_SSD / (0.45 * TAU_SSD + 0.55 * TAU_HDD)) < 0.02


def test_a_phase_slowed_by_something_else_is_not_predicted():
    phases, samples = pools(slow={"relearned": 0.3})
    h = heldout_test(phases, samples, ENGINES)
    assert h.verdict == ho.DESCRIPTIVE
    assert h.worst.label == "qcow2 relearned" and h.worst.error_pct > 200


def test_an_initial_phase_its_hdd_share_cannot_explain_gives_no_flash_speed():
    # τ_init = 300 µs with half of it on HDDs at 700 µs would need a flash tier faster than instant
    assert np.isnan(predicted_ratio(0.5, 0.5, 300.0, 700.0))
    assert abs(predicted_ratio(1.0, 1.0, 150.0, 700.0) - 1.0) < 1e-12


def test_missing_pools_leave_nothing_held_out():
    phases, samples = pools()
    h = heldout_test(phases, samples, {"LVM thin": ("sas.lvmthin", "tier.lvmthin")})
    assert h.verdict == ho.DESCRIPTIVE and not h.points
