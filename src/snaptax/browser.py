"""A headless Chromium (Debian's package `chromium`) driven over the DevTools protocol, for checking pages offline:
the JupyterLab that shows the notebooks (tests/test_browser.py), later the companion site.

The protocol runs over a pipe (--remote-debugging-pipe: the browser reads commands on fd 3 and writes replies and
events on fd 4, each a JSON text ended by NUL), so no port is opened and no driver is needed. Every request a page
makes is paused first (Fetch domain): one for this machine goes on, one for any other host is failed and recorded
in `blocked`; what Fetch does not see (WebSockets, the browser's own traffic) finds no way out either: every host but
this machine is reached through a proxy that does not exist. The page's console warnings and errors and its uncaught
exceptions are kept in `console`.
"""
from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import itertools
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import SnaptaxError
from .host import procs

LOCAL_SCHEMES = frozenset({"data", "blob", "about", "chrome", "devtools", "file"})   # never leave the machine
FLAGS = (
    "--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
    "--disable-default-apps", "--disable-breakpad", "--disable-crash-reporter", "--metrics-recording-only",
    "--mute-audio", "--password-store=basic", "--use-mock-keychain", "--window-size=1400,1000",
    # nothing but this machine is reachable: loopback bypasses the proxy, every other host goes to a closed port
    "--proxy-server=http://127.0.0.1:9",
)


class BrowserError(SnaptaxError):
    pass


def is_local(url: str) -> bool:
    """Whether a request for `url` stays on this machine: a scheme the browser serves itself, localhost, or a loopback
    address (127.0.0.0/8, ::1)."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES or parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname or "").is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ConsoleEntry:
    level: str      # "warning", "error" or "exception"
    text: str


def _above(fd: int, lowest: int) -> int:
    """The same pipe end at a file descriptor >= lowest (the original closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, lowest)
    os.close(fd)
    return moved


class Browser:
    """One Chromium process with a fresh profile; `with Browser() as b: page = b.page(url)`. Stopping it stops
    every process it started (its own process group) and removes its profile directory."""

    def __init__(self, binary: str = "chromium", timeout_s: float = 30.0) -> None:
        self.binary, self.timeout_s = binary, timeout_s
        self.requests: list[str] = []           # every URL a page asked for, in order
        self.blocked: list[str] = []            # those that would have left the machine
        self.console: list[ConsoleEntry] = []
        self._ids = itertools.count(1)
        self._replies: dict[int, queue.Queue[dict]] = {}
        self._handlers: list[Callable[[dict], None]] = []
        self._lock = threading.Lock()

    # -- process and transport ------------------------------------------------------------------------------------

    def __enter__(self) -> Browser:
        self._profile = Path(tempfile.mkdtemp(prefix="snaptax-chromium-"))
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the child's ends above fd 9, so that moving them onto fds 3 and 4 cannot overwrite one with the other
        to_browser_r, from_browser_w = (_above(fd, 10) for fd in (to_browser_r, from_browser_w))
        flags = [*FLAGS, f"--user-data-dir={self._profile}", "--remote-debugging-pipe"]
        if os.geteuid() == 0:
            flags.append("--no-sandbox")        # Chromium refuses to run as root with its sandbox
        # bash, not sh: dash takes no file descriptor above 9 in a redirection
        argv = ["bash", "-c", f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w}', procs.require(self.binary),
                *flags, "about:blank"]
        self._proc = procs.popen_owned(argv, pass_fds=(to_browser_r, from_browser_w), stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._reader = threading.Thread(target=self._read, name="chromium-devtools", daemon=True)
        self._reader.start()
        self._handlers.append(self._on_event)
        try:
            self.send("Target.setDiscoverTargets", {"discover": False})
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        # Closed by the protocol first: the browser then ends its own processes and reaps them (killed at once, they
        # would be left to init as zombies); what is still running after is stopped with its process group.
        with contextlib.suppress(Exception):
            self.send("Browser.close", timeout_s=5)
            self._proc.wait(timeout=10)
        procs.stop_group(self._proc, grace=5.0)
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._reader.join(5)
        shutil.rmtree(self._profile, ignore_errors=True)

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        waiting = self._replies.get(message["id"])
                    if waiting is not None:
                        waiting.put(message)
                else:
                    for handler in list(self._handlers):
                        handler(message)

    def post(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        """Send a command without waiting for its reply (from an event handler, which runs on the reader)."""
        message: dict[str, Any] = {"id": next(self._ids), "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        with self._lock:
            self._replies[message["id"]] = queue.Queue()
            os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return message["id"]

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout_s: float | None = None) -> dict:
        """Send a command and return its result; BrowserError with the browser's message if it failed."""
        ident = self.post(method, params, session)
        try:
            reply = self._replies[ident].get(timeout=timeout_s or self.timeout_s)
        except queue.Empty:
            raise BrowserError(f"chromium: no reply to {method} within {timeout_s or self.timeout_s} s") from None
        finally:
            with self._lock:
                self._replies.pop(ident, None)
        if "error" in reply:
            raise BrowserError(f"chromium: {method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    # -- what every page does ---------------------------------------------------------------------------------

    def _attach(self, session: str) -> None:
        """Make a newly attached target (a page, or a worker it starts) ask before every request, report its
        console, and attach its own workers the same way; then let it run."""
        self.post("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, session)
        self.post("Network.enable", {}, session)
        self.post("Runtime.enable", {}, session)
        self.post("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True},
                  session)
        self.post("Runtime.runIfWaitingForDebugger", {}, session)

    def _on_event(self, message: dict) -> None:
        method, params, session = message.get("method"), message.get("params", {}), message.get("sessionId")
        if method == "Fetch.requestPaused":
            url = params["request"]["url"]
            if is_local(url):
                self.post("Fetch.continueRequest", {"requestId": params["requestId"]}, session)
            else:
                self.blocked.append(url)
                self.post("Fetch.failRequest", {"requestId": params["requestId"], "errorReason": "BlockedByClient"},
                          session)
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Network.webSocketCreated":
            self.requests.append(params["url"])
            if not is_local(params["url"]):
                self.blocked.append(params["url"])
        elif method == "Target.attachedToTarget":
            self._attach(params["sessionId"])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("warning", "error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self.console.append(ConsoleEntry("error" if params["type"] != "warning" else "warning", text))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text", "")
            self.console.append(ConsoleEntry("exception", text))

    def page(self, url: str, timeout_s: float | None = None) -> Page:
        """A new tab that has loaded `url` (its load event fired)."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self._attach(session)
        self.send("Page.enable", {}, session)
        loaded = threading.Event()

        def on_load(message: dict) -> None:
            if message.get("sessionId") == session and message.get("method") == "Page.loadEventFired":
                loaded.set()
        self._handlers.append(on_load)
        try:
            self.send("Page.navigate", {"url": url}, session)
            if not loaded.wait(timeout_s or self.timeout_s):
                raise BrowserError(f"chromium: {url} did not load within {timeout_s or self.timeout_s} s")
        finally:
            self._handlers.remove(on_load)
        return Page(self, session)


class Page:
    """A tab of a Browser: evaluate JavaScript in it, or wait until an expression holds."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser, self.session = browser, session

    def evaluate(self, expression: str, timeout_s: float | None = None) -> Any:
        """The value of a JavaScript expression (awaited if it is a promise), as JSON."""
        result = self.browser.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                        "returnByValue": True}, self.session, timeout_s)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise BrowserError(f"chromium: {details.get('exception', {}).get('description') or details['text']}")
        return result["result"].get("value")

    def close(self) -> None:
        target = self.browser.send("Target.getTargetInfo", {}, self.session)["targetInfo"]["targetId"]
        self.browser.send("Target.closeTarget", {"targetId": target})

    def wait_for(self, expression: str, timeout_s: float, poll_s: float = 0.25) -> Any:
        """Evaluate `expression` until its value is truthy; that value, or BrowserError naming it after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"chromium: still false after {timeout_s} s: {expression[:200]}")
            time.sleep(poll_s)
