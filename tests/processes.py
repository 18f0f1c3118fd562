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
