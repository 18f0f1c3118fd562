"""Live processes seen from /proc, for tests that check nothing they started is left running."""
import os
from pathlib import Path


def processes_mentioning(text: str) -> list[int]:
    """PIDs of live processes (other than this one) whose command line contains `text`; each test's scratch
    directory is unique, so its path names exactly the processes the test started."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if text.encode() in (d / "cmdline").read_bytes():
                    pids.append(int(d.name))
            except OSError:
                pass
    return [p for p in pids if p != os.getpid()]


def processes_in(directory: Path) -> list[str]:
    """Live processes (other than this one) whose working directory lies under `directory`, also once it has been
    deleted: fio runs in its staging directory and names no path of it on its command line, nor do the job
    processes it forks. Each as "pid cwd=... command line"."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(d / "cwd")
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd.startswith(str(directory)):
            found.append(f"{d.name} cwd={cwd} {cmdline}")
    return found
