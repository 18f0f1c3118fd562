"""LVM thin's configuration (snaptax.engines.lvmthin.config)."""
from __future__ import annotations

import pytest

from snaptax.engines.lvmthin.config import LvmThinConfig
from snaptax.engines.lvmthin.engine import LvmThinEngine
from snaptax.errors import ConfigError
from tests.engines.lvmthin.plans import MiB


def test_config_validation(rig):
    with pytest.raises(ConfigError, match="chunk_size"):
        LvmThinConfig(chunk_size=32 << 10)
    with pytest.raises(ConfigError, match="chunk_size"):
        LvmThinConfig(chunk_size=96 << 10)
    with pytest.raises(ConfigError, match="pool_factor"):
        LvmThinConfig(pool_factor=1.5)
    with pytest.raises(ConfigError, match="chain"):
        LvmThinConfig(chain="tree")
    with pytest.raises(ConfigError, match="capacity"):
        LvmThinEngine(rig, rig.device(), LvmThinConfig(), disk_size=512 * MiB)
    with pytest.raises(ConfigError, match="1 MiB"):
        LvmThinEngine(rig, rig.device(), LvmThinConfig(), disk_size=MiB + 4096)
