#!/usr/bin/env python3
"""A do-nothing byte relay: `byte_relay.py -- <command> [args...]`.

Owned by the interop harness. It runs the command as a child and copies its own stdin to the
child's stdin and the child's stdout to its own stdout, byte for byte, with the child's stderr
inherited. It stands in for `rootfence run` so the harness's "through a wrapper" path can be
proven on its own: a wrapper that changes nothing must give the same transcript as direct.
When its stdin ends it closes the child's stdin; it exits with the child's status.
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


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "--" or len(argv) < 2:
        print("usage: byte_relay.py -- <command> [args...]", file=sys.stderr)
        return 2
    child = subprocess.Popen(argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdin is not None and child.stdout is not None
    to_child = threading.Thread(target=pump, args=(0, child.stdin.fileno(), True), daemon=True)
    to_child.start()
    pump(child.stdout.fileno(), 1, False)
    status = child.wait()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
