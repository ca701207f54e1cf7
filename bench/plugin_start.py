"""What the installed pytest plugin costs a project that never runs a law: a pytest start with the plugin against the
same start without it (``-p no:nanolm_verify``), measured in one invocation (same machine load).

    python bench/plugin_start.py              # best of 3 of each, alternating
    python bench/plugin_start.py --repeat 5

The project is a temporary folder with one trivial test (nothing of this repository on the path but the installed
package). Prints each run's wall-clock time, the best of each side, the ratio with / without (the target: ≤ 1.3)
and the machine's load; exit status 1 when a run fails or the ratio is above the target.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.3


def timed_pytest(folder: Path, *extra: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "NANOLM_", "HYPOTHESIS_"))}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"pytest {' '.join(extra)} failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side (best taken); default 3")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
        timed_pytest(folder)  # warm the file cache of both sides
        runs: dict[str, list[float]] = {"with the plugin": [], "without (-p no:nanolm_verify)": []}
        for _ in range(args.repeat):  # alternate, so that a change of load hits both sides alike
            runs["with the plugin"].append(timed_pytest(folder))
            runs["without (-p no:nanolm_verify)"].append(timed_pytest(folder, "-p", "no:nanolm_verify"))
    for side, times in runs.items():
        print(f"{side:32s} best {min(times):6.2f} s   runs: {', '.join(f'{t:.2f}' for t in times)}")
    ratio = min(runs["with the plugin"]) / min(runs["without (-p no:nanolm_verify)"])
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"ratio with / without: {ratio:.2f} (target ≤ {TARGET}); {os.cpu_count()} CPUs, load average {load}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
