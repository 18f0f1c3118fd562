"""The QMP client against a scripted fake monitor on a unix socket."""
import json
import socket
import threading

import pytest

from snaptax.errors import EngineError
from snaptax.host.qmp import QMPClient, QMPError, block_job_ready


def fake_monitor(path, script):
    """Serve one client: greet, then for each received command send the scripted replies."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)
    received = []

    def serve():
        conn, _ = srv.accept()
        f = conn.makefile("rwb")
        f.write(b'{"QMP": {"version": {}, "capabilities": []}}\n')
        f.flush()
        for replies in script:
            line = f.readline()
            if not line:
                break
            received.append(json.loads(line))
            for r in replies:
                f.write(json.dumps(r).encode() + b"\n")
                f.flush()
        conn.close()
        srv.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return received, t


def test_commands_events_and_errors(tmp_path):
    path = tmp_path / "qmp.sock"
    ready = {"event": "BLOCK_JOB_READY", "data": {"device": "j1"}}
    received, t = fake_monitor(path, [
        [{"return": {}}],                                            # qmp_capabilities
        [ready, {"return": {"status": "running"}}],                  # query-status (event arrives first)
        [{"error": {"class": "GenericError", "desc": "no such node"}}],
    ])
    with QMPClient(path, timeout=5) as q:
        assert q.execute("query-status") == {"status": "running"}
        assert q.wait_event(lambda e: e["event"] == "BLOCK_JOB_READY", timeout=1) == ready
        with pytest.raises(QMPError, match="no such node"):
            q.execute("blockdev-del", **{"node-name": "x"})
    t.join(2)
    assert received[0] == {"execute": "qmp_capabilities"}
    assert received[2] == {"execute": "blockdev-del", "arguments": {"node-name": "x"}}


def test_wait_event_times_out(tmp_path):
    path = tmp_path / "qmp.sock"
    fake_monitor(path, [[{"return": {}}], []])
    with QMPClient(path, timeout=5) as q:
        with pytest.raises(EngineError, match="timed out"):
            q.wait_event(lambda e: False, timeout=0.2)


def test_job_failure_is_raised_and_dismissed(tmp_path):
    path = tmp_path / "qmp.sock"
    concluded = {"event": "JOB_STATUS_CHANGE", "data": {"id": "c1", "status": "concluded"}}
    received, t = fake_monitor(path, [
        [{"return": {}}],
        [{"return": {}}, concluded],                                 # blockdev-create
        [{"return": [{"id": "c1", "status": "concluded", "error": "disk full"}]}],  # query-jobs
        [{"return": {}}],                                            # job-dismiss
    ])
    with QMPClient(path, timeout=5) as q:
        with pytest.raises(EngineError, match="disk full"):
            q.run_job("blockdev-create", "c1", options={})
    t.join(2)
    assert received[-1] == {"execute": "job-dismiss", "arguments": {"id": "c1"}}


def test_wait_block_job_ready_takes_that_jobs_event_and_leaves_the_others_queued(tmp_path):
    path = tmp_path / "qmp.sock"
    other = {"event": "BLOCK_JOB_READY", "data": {"device": "j1"}}
    status = {"event": "JOB_STATUS_CHANGE", "data": {"id": "j2", "status": "ready"}}
    ready = {"event": "BLOCK_JOB_READY", "data": {"device": "j2"}}
    fake_monitor(path, [[{"return": {}}], [other, status, ready, {"return": {}}], []])
    with QMPClient(path, timeout=5) as q:
        q.execute("block-commit", **{"job-id": "j2", "device": "top"})
        assert q.wait_block_job_ready("j2", timeout=1) == ready
        assert list(q.events) == [other, status]
        with pytest.raises(EngineError, match="timed out"):
            q.wait_block_job_ready("j3", timeout=0.2)
        assert list(q.events) == [other, status]


def test_block_job_ready_matches_only_that_jobs_ready_event():
    match = block_job_ready("j1")
    assert match({"event": "BLOCK_JOB_READY", "data": {"device": "j1", "len": 1, "offset": 1}})
    assert not match({"event": "BLOCK_JOB_READY", "data": {"device": "j2"}})
    assert not match({"event": "BLOCK_JOB_COMPLETED", "data": {"device": "j1"}})
    assert not match({"event": "STOP"})
