"""cofw.control: the client's side of the JSON-lines control socket, against a scripted fake plugin (no nbdkit)."""
from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable

import pytest

from snaptax.cofw.control import ControlClient, try_ping
from snaptax.errors import EngineError

SOCKET = "ctl.sock"    # relative to the test's directory: a unix socket path must stay under 108 bytes


class FakePlugin:
    """Listens on SOCKET; answers each request line with answer(request) (bytes sent as they are; None: hang up)."""

    def __init__(self, answer: Callable[[dict], bytes | None]) -> None:
        self.answer, self.requests = answer, []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(SOCKET)
        self.sock.listen()
        self.sock.settimeout(10)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn, conn.makefile("rwb") as f:
            for line in f:
                self.requests.append(json.loads(line))
                reply = self.answer(self.requests[-1])
                if reply is None:
                    return
                f.write(reply)
                f.flush()

    def close(self) -> None:
        self.sock.close()
        self.thread.join(10)


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    made: list[FakePlugin] = []

    def make(answer: Callable[[dict], bytes | None]) -> FakePlugin:
        made.append(FakePlugin(answer))
        return made[-1]
    yield make
    for p in made:
        p.close()


def _ok(result) -> bytes:
    return json.dumps({"ok": True, "result": result}).encode() + b"\n"


def test_a_request_is_one_json_line_and_the_result_comes_back(plugin):
    fake = plugin(lambda req: _ok({"name": req["name"], "pages": 3}) if req["op"] == "create" else _ok([]))
    with ControlClient(SOCKET, timeout=10) as c:
        assert c.call("create", name="s1") == {"name": "s1", "pages": 3}
        assert c.call("list") == []
    assert fake.requests == [{"op": "create", "name": "s1"}, {"op": "list"}]


def test_the_plugins_error_comes_back_as_engine_error(plugin):
    plugin(lambda req: json.dumps({"ok": False, "error": "snapshot 's1' exists"}).encode() + b"\n")
    with ControlClient(SOCKET, timeout=10) as c, \
            pytest.raises(EngineError, match="^cofw create: snapshot 's1' exists$"):
        c.call("create", name="s1")


def test_a_hang_up_is_engine_error(plugin):
    plugin(lambda req: None)
    with ControlClient(SOCKET, timeout=10) as c, \
            pytest.raises(EngineError, match="cofw control delete: nbdkit closed the control socket"):
        c.call("delete", name="s1")


@pytest.mark.parametrize("reply", [b"{not json\n", b"[1, 2]\n", b"\"pong\"\n", b"\xff\xfe\n"])
def test_a_garbled_reply_is_engine_error_naming_the_op(plugin, reply):
    plugin(lambda req: reply)
    with ControlClient(SOCKET, timeout=10) as c, \
            pytest.raises(EngineError, match="^cofw control counters: not a JSON object reply: "):
        c.call("counters")


def test_no_reply_within_the_timeout_is_engine_error(plugin):
    done = threading.Event()
    plugin(lambda req: b"" if done.wait(10) else None)      # reads the request, answers nothing until released
    try:
        with ControlClient(SOCKET, timeout=0.2) as c, \
                pytest.raises(EngineError, match="cofw control ping: .*timed out"):
            c.call("ping")
    finally:
        done.set()


def test_connecting_to_no_socket_is_engine_error_naming_the_path(tmp_path):
    path = tmp_path / "none.sock"
    with pytest.raises(EngineError, match=f"cofw control socket {path}: No such file or directory"):
        ControlClient(path)


def test_try_ping_is_true_only_for_pong(plugin):
    assert not try_ping(SOCKET)                               # no socket yet
    plugin(lambda req: _ok("pong"))
    assert try_ping(SOCKET)


@pytest.mark.parametrize("reply", [_ok("pang"), b"garbage\n", b"{\"ok\": false, \"error\": \"starting\"}\n", None])
def test_try_ping_is_false_for_any_other_answer(plugin, reply):
    plugin(lambda req: reply)
    assert try_ping(SOCKET) is False


def test_try_ping_on_a_file_that_is_not_a_socket(tmp_path):
    (tmp_path / "plain").write_text("")
    assert try_ping(tmp_path / "plain") is False
