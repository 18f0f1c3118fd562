"""snaptax.bench.crosscheck: qemu-img bench on the chain study's configurations, end to end on a small image."""
import shutil

import pytest

from snaptax import bench
from snaptax.bench import crosscheck
from snaptax.engines.qcow2 import metadata_configs

requires_qemu_img = pytest.mark.skipif(not shutil.which("qemu-img"), reason="needs qemu-img (make setup)")


def test_image_options_carry_the_configuration(tmp_path):
    on_disk = metadata_configs(1 << 30)[0]
    opts = crosscheck._overlay_opts(tmp_path / "o.qcow2", on_disk)
    assert opts.startswith("driver=qcow2,") and "cache.direct=on" in opts and "aio=native" in opts
    assert f"l2-cache-size={on_disk.l2_cache_size}" in opts
    assert "driver=raw," in crosscheck._raw_opts(tmp_path / "b.raw")


def test_the_group_is_in_make_bench():
    assert "crosscheck" in bench.groups()


@pytest.mark.integration
@requires_qemu_img
def test_a_small_run_gives_a_loss_per_configuration(work_dir):
    out = crosscheck.run(disk=32 << 20, rounds=2, count=256)
    for cfg in metadata_configs(32 << 20):
        key = cfg.name.replace("-", "_")
        assert -100 < out[f"crosscheck_loss_{key}"] < 100
        assert out[f"crosscheck_loss_{key}_low"] <= out[f"crosscheck_loss_{key}"] <= out[f"crosscheck_loss_{key}_high"]
    assert out["crosscheck_base_iops"] > 0
    assert not list(work_dir.rglob("crosscheck-*"))          # the images are gone
