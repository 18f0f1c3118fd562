import os
import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def disk_dir():
    """A scratch directory on a disk file system (/var/tmp), not a possible tmpfs /tmp: the crash semantics rely
    on a disk file system's allocation map and block size."""
    d = Path(tempfile.mkdtemp(prefix="cofw-test-", dir=os.environ.get("SNAPTAX_TEST_TMP", "/var/tmp")))
    yield d
    shutil.rmtree(d, ignore_errors=True)
