import pytest

from tests.engines.lvmthin.plans import MiB


@pytest.fixture
def rig(scratch_rig):
    return scratch_rig("lvmthin", 512 * MiB)
