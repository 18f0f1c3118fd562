"""Smoke test of the cofw bench: tiny and short, checks the plumbing (not the number)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from snaptax.bench.cofw import BenchConfig, cofw_engine_over_raw
from snaptax.errors import ConfigError


def test_bench_config_is_validated():
    with pytest.raises(ConfigError, match="rounds"):
        BenchConfig(rounds=0)
    with pytest.raises(ConfigError, match="size"):
        BenchConfig(size=10000)
    with pytest.raises(ConfigError, match="first_write_span"):
        BenchConfig(size=1 << 20, first_write_span=2 << 20)


@pytest.mark.integration
def test_bench_smoke():
    d = Path(tempfile.mkdtemp(prefix="cofw-bench-", dir=os.environ.get("SNAPTAX_TEST_TMP", "/var/tmp")))
    try:
        r = cofw_engine_over_raw(d, BenchConfig(size=64 << 20, runtime_s=1, ramp_time_s=0, rounds=2,
                                                first_write_span=8 << 20))
        assert len(r.ratios) == 2 and r.value > 0 and all(x > 0 for x in r.engine_iops + r.raw_iops)
        assert len(r.first_write_ratios) == 2 and r.first_write > 0
        assert list(d.iterdir()) == [], "the bench must remove its scratch files"
    finally:
        shutil.rmtree(d, ignore_errors=True)
