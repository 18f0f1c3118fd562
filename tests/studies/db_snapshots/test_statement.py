"""The statement's work and the sensitivity of the ratios to the module write rate the time scale assumes."""
import math

import pandas as pd
import pytest

from snaptax import profiles
from snaptax.studies.db_snapshots import analyse as an, plan as pl, statement as st


def _params():
    return pl.parameters(pl.scale(profiles.get("quick")), pl.SOURCE_DEVICES, pl.local_statement())


def _runs(work_s, added_s, device, replicates=3):
    """Each replicate's runs: k snapshots add added_s[k] to a baseline that is all statement work (work_s)."""
    return pd.DataFrame([{"device": device, "replicate": r, "repeat": 0, "k": k,
                          "duration_s": work_s * (1 + 0.01 * r) + added_s[k], "statement_s": work_s * (1 + 0.01 * r),
                          "busy_s": 2 * added_s[k], "copy_write_commit_s": added_s[k], "copy_write_s": added_s[k] / 2}
                         for r in range(replicates) for k in (0, 1, 2)])


def test_the_local_ssd_pair_stands_at_four_times_the_module_and_the_raid5_at_its_own_time():
    p = _params()
    assert st.time_scale_of(p, st.SSD) == pytest.approx(4.0, rel=1e-6)
    assert st.time_scale_of(p, st.RAID5) == pytest.approx(1.0, rel=1e-6)


def test_a_faster_module_lengthens_the_capped_devices_statement_work_only():
    p = _params()
    runs = pd.concat([_runs(7.2, (0, 1.3, 2.2), st.SSD), _runs(1.8, (0, 20.0, 40.0), st.RAID5)], ignore_index=True)
    shifted = st.shifted_runs(runs, p, 600.0)
    ssd, raid5 = shifted.device == st.SSD, shifted.device == st.RAID5
    assert list(shifted[ssd].duration_s) == pytest.approx(list(runs[ssd].duration_s + 0.2 * runs[ssd].statement_s))
    assert list(shifted[raid5].duration_s) == list(runs[raid5].duration_s)
    assert list(st.shifted_runs(runs, p, 500.0).duration_s) == pytest.approx(list(runs.duration_s))


def test_the_sensitivity_values_are_the_ratios_at_the_other_rate():
    p = _params()
    runs = pd.concat([_runs(7.2, (0, 1.3, 2.2), st.SSD), _runs(1.8, (0, 20.0, 40.0), st.RAID5)], ignore_index=True)
    v = {x.key: x for x in an.sensitivity_values(runs, p)}
    assert v["db_snapshots.sensitivity.module_write_mb_s"].value == st.ALT_MODULE_WRITE_MB_S
    k1 = v["db_snapshots.sensitivity.ssd_snapshots.k1.ratio"]
    # the copies' 1.3 s over a baseline a fifth longer (its statement work is all of it), replicate 0's 7.2 s
    assert 100 * (1 + 1.3 / (7.2 * 1.2 * 1.02)) < k1.value < 100 * (1 + 1.3 / (7.2 * 1.2))
    assert k1.n == 3 and k1.has_interval
    assert v["db_snapshots.sensitivity.ssd_snapshots.second_over_first"].value == pytest.approx(100 * 0.9 / 1.3)


def test_runs_without_the_statement_counter_have_no_sensitivity():
    runs = _runs(7.2, (0, 1.3, 2.2), st.SSD).assign(statement_s=math.nan)
    v = {x.key: x for x in an.sensitivity_values(runs, _params())}
    assert math.isnan(v["db_snapshots.sensitivity.ssd_snapshots.k1.ratio"].value)


def test_a_run_before_the_statements_work_has_no_sensitivity():
    import dataclasses
    before = dataclasses.replace(_params(), statement_ns=None)
    runs = _runs(7.2, (0, 1.3, 2.2), st.SSD)
    v = {x.key: x for x in an.sensitivity_values(runs, before)}
    assert math.isnan(v["db_snapshots.sensitivity.ssd_snapshots.k1.ratio"].value)
