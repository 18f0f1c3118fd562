"""qemu-storage-daemon protocol nodes: the arguments the daemon's file and block nodes are added with."""
from __future__ import annotations

import pytest

from snaptax.errors import EngineError
from snaptax.host import qsd


@pytest.mark.parametrize(("kind", "driver"), [("file", "file"), ("block", "host_device")])
def test_file_and_block_nodes_submit_with_the_chosen_aio_and_bypass_the_page_cache(kind, driver):
    node = qsd.protocol_for(kind, path="/dev/null")
    assert (node["driver"], node["aio"], node["cache"]["direct"]) == (driver, qsd.FILE_AIO, True)
    assert qsd.protocol_for(kind, path="/dev/null", aio="io_uring")["aio"] == "io_uring"


def test_an_unknown_aio_mode_is_refused_naming_it():
    with pytest.raises(EngineError, match="aio must be 'native' or 'io_uring', got 'threads'"):
        qsd.protocol_for("file", path="/dev/null", aio="threads")  # type: ignore[arg-type]  # what a caller without mypy could pass


def test_an_nbd_node_has_no_aio():
    node = qsd.protocol_for("nbd", nbd_socket="/run/x.sock", nbd_export="disk")  # type: ignore[arg-type]
    assert node == {"driver": "nbd", "server": {"type": "unix", "path": "/run/x.sock"}, "export": "disk"}
