"""A JupyterLab server for browser tests: on 127.0.0.1 at a port the kernel picks, with a token, every Jupyter
directory (configuration, data, runtime, settings, workspaces) in a temporary directory, and nothing it fetches from
the internet (no news feed, no update check). Stopped with the kernels it started. It serves what it is given as its
root: give it copies (JupyterLab writes a checkpoint of each notebook it opens, and saves what changes)."""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from snaptax.host import procs

CONFIG: dict[str, dict] = {
    "ServerApp": {"ip": "127.0.0.1", "port": 0, "port_retries": 0, "open_browser": False},
    # no request from the server to jupyterlab.github.io or PyPI
    "LabApp": {"news_url": None, "check_for_updates_class": "jupyterlab.NeverCheckForUpdate"},
}
# Every cell rendered, not only those in view (JupyterLab's default virtualises long notebooks).
SETTINGS = {"@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"}}


@dataclass(frozen=True)
class Lab:
    url: str        # http://127.0.0.1:PORT
    token: str
    runtime: Path   # the Jupyter runtime directory: kernels' connection files name it

    def tree(self, path: str) -> str:
        """The URL that opens `path` (relative to the server's root) in a fresh workspace."""
        return f"{self.url}/lab/tree/{path}?reset&token={self.token}"


@contextlib.contextmanager
def jupyterlab(root: Path, scratch: Path, start_timeout_s: float = 60.0) -> Iterator[Lab]:
    config, runtime, settings = scratch / "config", scratch / "runtime", scratch / "settings"
    config.mkdir(parents=True)
    (config / "jupyter_server_config.json").write_text(json.dumps(CONFIG))
    for name, value in SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(value))
    token = secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(runtime),
           "JUPYTER_DATA_DIR": str(scratch / "data"),       # the notebooks' trust database; kernels are in sys.prefix
           "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "workspaces"),
           "IPYTHONDIR": str(scratch / "ipython")}
    argv = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}"]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    log = scratch / "jupyterlab.log"
    with open(log, "wb") as out:
        proc = procs.popen_owned(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        info = runtime / f"jpserver-{proc.pid}.json"
        deadline = time.monotonic() + start_timeout_s
        while not info.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"jupyterlab did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        port = json.loads(info.read_text())["port"]
        yield Lab(f"http://127.0.0.1:{port}", token, runtime)
    finally:
        procs.stop_group(proc, grace=15.0)      # SIGTERM: the server shuts its kernels down first


def processes_naming(text: str) -> list[int]:
    """Processes whose command line contains `text` (a kernel names its connection file, in the runtime dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found
