"""Exit 0 when a CUDA device is visible, else exit 1 with one line saying so — before anything is installed.

``tox -e cuda`` runs this first (standard library only: no torch yet, no multi-GB CUDA build downloaded to find out
that there is no GPU). It asks the CUDA driver itself, as torch does: ``cuInit`` and ``cuDeviceGetCount`` from
``libcuda`` (so ``CUDA_VISIBLE_DEVICES`` is honoured).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

HINT = "the CUDA tier cannot run here. Use a GPU machine, or tox -e cpu."


def main() -> int:
    name = ctypes.util.find_library("cuda") or "libcuda.so.1"
    try:
        driver = ctypes.CDLL(name)
    except OSError:
        print(f"tox -e cuda: no CUDA driver on this machine ({name} not found); {HINT}", file=sys.stderr)
        return 1
    count = ctypes.c_int(0)
    status = driver.cuInit(0)
    if status == 0:
        status = driver.cuDeviceGetCount(ctypes.byref(count))
    if status != 0 or count.value == 0:
        why = f"the driver answers error {status}" if status else "no device is visible (CUDA_VISIBLE_DEVICES?)"
        print(f"tox -e cuda: {why}; {HINT}", file=sys.stderr)
        return 1
    print(f"tox -e cuda: {count.value} CUDA device{'s' if count.value != 1 else ''} visible")
    return 0


if __name__ == "__main__":
    sys.exit(main())
