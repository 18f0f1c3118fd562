"""The database-snapshot models' held-out test on synthetic runs: durations that follow T0 + β·C."""
import numpy as np
import pandas as pd
import pytest

from snaptax.studies.db_snapshots import analyse as an, heldout as ho_db
from snaptax.studies.db_snapshots.plan import HELDOUT_DEVICE, HELDOUT_FIT_DEVICE


def runs(beta_held: float, seed: int = 2, t0_held: float = 0.3) -> pd.DataFrame:
    """Five repetitions of k = 0, 1, 2 per device; copy work C = k·(0.5 s on the SSD, 4 s on the RAID5)
    thread-seconds, duration T0 + β·C with β = 0.1 on the SSD and `beta_held` on the RAID5, T0 0.3 s on the SSD and
    `t0_held` on the RAID5, ±1 % noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for device, per, beta, t0 in ((HELDOUT_DEVICE, 4.0, beta_held, t0_held), (HELDOUT_FIT_DEVICE, 0.5, 0.1, 0.3)):
        for rep in range(5):
            for k in (0, 1, 2):
                c = k * per * rng.normal(1, 0.02)
                rows.append({"device": device, "replicate": 0, "repeat": rep, "k": k, "duration_s": (t0 + beta * c)
                             * rng.normal(1, 0.01), "pages_first_written": 1000.0 if k else np.nan,
                             "copy_read_s": c / 3 if k else np.nan, "copy_write_s": c / 3 if k else np.nan,
                             "commit_s": c / 3 if k else np.nan, "source_write_s": 0.1, "first_snapshot_s": 0.0,
                             "second_snapshot_s": 0.0, "concurrency": 1.0})
    return pd.DataFrame(rows)


def test_the_fit_recovers_t0_and_beta():
    r = runs(0.1)
    beta, cov, dof = ho_db.fit_copy_work(r[r.device == HELDOUT_FIT_DEVICE])
    assert beta[0] == pytest.approx(0.3, rel=0.02) and beta[1] == pytest.approx(0.1, rel=0.05) and dof == 13
    assert np.all(np.diag(cov) > 0)


def test_the_same_share_of_copy_work_predicts_another_share_does_not():
    for beta_held, verdict in ((0.1, "predicts"), (0.07, "descriptive only")):
        r = runs(beta_held)
        h, _, _ = ho_db.heldout_test(r, an.summary_table(r))
        assert h.verdict == verdict, (beta_held, h.reason)
        assert [p.label for p in h.points] == ["k1", "k2"]


def test_with_its_own_baseline_the_held_out_device_s_t0_is_not_the_fit_s():
    """Baselines that differ by design (own sources, own time scales): the shared-T0 test fails on them, the
    own-baseline one predicts from the same share of copy work, and still refuses another share."""
    r = runs(0.1, t0_held=1.5)
    shared, _, _ = ho_db.heldout_test(r, an.summary_table(r))
    own, _, _ = ho_db.heldout_test(r, an.summary_table(r), own_baseline=True)
    assert shared.verdict == "descriptive only" and own.verdict == "predicts", own.reason
    r = runs(0.07, t0_held=1.5)
    assert ho_db.heldout_test(r, an.summary_table(r), own_baseline=True)[0].verdict == "descriptive only"
