#!/usr/bin/env python3
"""A do-nothing byte relay: `byte_relay.py [--tamper OLD NEW] -- <command> [args...]`.

Owned by the interop harness. It runs the command as a child and copies its own stdin to the
child's stdin and the child's stdout to its own stdout, byte for byte, with the child's stderr
inherited. It stands in for `rootfence run` so the harness's "through a wrapper" path can be
proven on its own: a wrapper that changes nothing must give the same transcript as direct.
When its stdin ends it closes the child's stdin; it exits with the child's status.

`--tamper OLD NEW` makes it a lying relay instead: it replaces OLD with NEW in each line the
server writes. The harness uses it to prove that it notices when a wrapper changes a result.
"""

import os
import subprocess
import sys
import threading


def pump(src: int, dst: int, close_dst: bool) -> None:
    try:
        while chunk := os.read(src, 65536):
            view = memoryview(chunk)
            while view:
                view = view[os.write(dst, view) :]
    except OSError:
        pass
    finally:
        if close_dst:
            try:
                os.close(dst)
            except OSError:
                pass


def tampering_pump(src, old: bytes, new: bytes) -> None:
    for line in src:
        sys.stdout.buffer.write(line.replace(old, new))
        sys.stdout.buffer.flush()


def main(argv: list[str]) -> int:
    tamper = None
    if argv[:1] == ["--tamper"] and len(argv) >= 3:
        tamper = (argv[1].encode(), argv[2].encode())
        argv = argv[3:]
    if not argv or argv[0] != "--" or len(argv) < 2:
        print("usage: byte_relay.py [--tamper OLD NEW] -- <command> [args...]", file=sys.stderr)
        return 2
    child = subprocess.Popen(argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdin is not None and child.stdout is not None
    to_child = threading.Thread(target=pump, args=(0, child.stdin.fileno(), True), daemon=True)
    to_child.start()
    if tamper is None:
        pump(child.stdout.fileno(), 1, False)
    else:
        tampering_pump(child.stdout, *tamper)
    status = child.wait()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
