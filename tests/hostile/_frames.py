"""Shared by the hostile subjects that write on their process's pipes: every socket or pipe it holds, and a frame
in multiprocessing's framing (a 4-byte length, then the payload)."""

import os
import stat
import struct


def pipes() -> list[int]:
    found = []
    for fd in range(3, 256):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
            found.append(fd)
    return found


def write_everywhere(payload: bytes) -> None:
    for fd in pipes():
        try:
            os.write(fd, struct.pack("!i", len(payload)) + payload)
        except OSError:
            pass
