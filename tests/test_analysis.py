import pandas as pd
import pytest

from snaptax import analysis


def results_frame():
    rows = []
    for index, (phase, n, rep, iops) in enumerate([("create", 0, 0, 100), ("create", 0, 1, 110),
                                                    ("create", 1, 0, 40), ("create", 1, 1, 60),
                                                    ("delete", 0, 0, 104)]):
        for direction in ("read", "write"):
            rows.append({"variant": "v", "index": index, "phase": phase, "job": "randrw", "rw": "randrw",
                         "repeat": rep, "chain_length": n, "direction": direction, "iops": iops / 2,
                         "ios": iops * 5, "host_disk_reads": iops * 10})
    return pd.DataFrame(rows)


def test_per_measurement_sums_directions_and_keeps_host_counters():
    meas = analysis.per_measurement(results_frame())
    assert list(meas.iops) == [100, 110, 40, 60, 104]
    assert list(meas.host_disk_reads) == [1000, 1100, 400, 600, 1040]
    assert analysis.host_reads_per_vm_read(meas).iloc[0] == pytest.approx(2.0)


def test_ratios_and_loss_within_one_run():
    rel = analysis.relative_to_baseline(analysis.summarize(analysis.per_measurement(results_frame())))
    one = rel[(rel.phase == "create") & (rel.chain_length == 1)].iloc[0]
    assert one.baseline == pytest.approx(105)
    assert one.ratio_median == pytest.approx(50 / 105)
    loss = analysis.loss_at(rel, 1).iloc[0]
    assert loss.loss_pct == pytest.approx(100 * (1 - 50 / 105))
    assert loss.loss_pct_low < loss.loss_pct < loss.loss_pct_high
