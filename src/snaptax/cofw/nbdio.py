"""Replay a write sequence over NBD. Run as a script under the system python3 (libnbd's Python binding,
python3-libnbd, is a Debian package, not in the venv):

    /usr/bin/python3 nbdio.py URI OPS.json DATA.bin

OPS.json is a list of [offset, length]; DATA.bin the concatenated payloads in the same order. Writes are issued
one at a time (a deterministic order, so two engines see the same sequence), then flushed.
"""
import json
import sys


def main(argv):
    import nbd  # python3-libnbd
    uri, ops_path, data_path = argv[1:4]
    with open(ops_path) as f:
        ops = json.load(f)
    with open(data_path, "rb") as f:
        data = memoryview(f.read())
    h = nbd.NBD()
    h.connect_uri(uri)
    pos = 0
    for offset, length in ops:
        h.pwrite(bytes(data[pos:pos + length]), offset)
        pos += length
    h.flush()
    h.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
