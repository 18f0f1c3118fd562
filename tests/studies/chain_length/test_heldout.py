"""The chain model's held-out test on synthetic sweeps with known service times."""
import math

import numpy as np
import pandas as pd
import pytest

from snaptax.models import chain as chain_model
from snaptax.studies.chain_length import heldout as ho_chain


def sweep(tau_layer_extra: float = 0.0, noise: float = 0.02, seed: int = 1) -> pd.DataFrame:
    """Create-phase rows: 6 runs at n = 0, one per n = 1..5; IOPS from the chain model (τ0 = 100, τ1 = 50, τL = 10
    µs) with an extra τ per layer beyond 2 (a curvature the model does not have), log-normal noise."""
    rng = np.random.default_rng(seed)
    n = np.array([0] * 6 + [1, 2, 3, 4, 5])
    tau = chain_model.time_per_io_us(n, 100, 50, 10) + tau_layer_extra * np.maximum(n - 2, 0) ** 2
    iops = 1e6 / tau * np.exp(rng.normal(0, noise, n.size))
    return pd.DataFrame({"variant": "v", "job": "randrw", "phase": "create", "chain_length": n, "iops": iops})


def test_predict_recovers_the_models_iops_with_an_interval():
    sw = sweep(noise=0.01)
    fit = sw[sw.chain_length <= 2]
    iops, se, dof = ho_chain.predict(fit.chain_length.to_numpy(), fit.iops.to_numpy(), 5)
    assert iops == pytest.approx(1e6 / 190, rel=0.05) and 0 < se < 0.1 and dof == 8 - 3


def test_a_chain_that_follows_the_model_predicts_and_one_that_curves_does_not():
    good = ho_chain.heldout_tests(sweep(noise=0.005), "quick")[("v", "randrw")]
    assert good.verdict == "predicts" and [p.label for p in good.points] == ["n3", "n4", "n5"]
    assert good.fit_points == 8
    bent = ho_chain.heldout_tests(sweep(tau_layer_extra=20.0, noise=0.005), "quick")[("v", "randrw")]
    assert bent.verdict == "descriptive only" and bent.worst is not None and bent.worst.label == "n5"
    assert bent.worst.error_pct > 10        # the model without the curvature predicts too many IOPS


def test_smoke_has_nothing_held_out():
    sw = sweep()
    h = ho_chain.heldout_tests(sw[sw.chain_length <= 2], "smoke")[("v", "randrw")]
    assert h.verdict == "descriptive only" and not h.points and "no chain longer" in h.reason
    assert math.isnan(h.quoted()["error"].value)
