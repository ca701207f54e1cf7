"""How long the command line takes to print text: ``nanolm-verify --help``, ``--version`` and each subcommand's
``--help``, against ``python -c pass`` (the interpreter's own start), measured in one invocation (same load).

    python bench/cli_start.py              # best of 5 of each, alternating with the baseline
    python bench/cli_start.py --repeat 9

Each command runs as the console script does (``properties.entry.cli:run``) with the repository's code first on
the path, from an empty temporary folder. Prints per command the best wall-clock time, its excess over the
baseline and the ratio to it; the target is a best time ≤ 0.5 s (nothing heavy — torch, Hypothesis, numpy, the
law library, golden's engine — is imported to print text). Exit status 1 when a command fails or misses it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 0.5  # seconds, best of the runs
ROOT = Path(__file__).resolve().parents[1]
CLI = "from properties.entry.cli import run; run()"  # what the nanolm-verify console script runs
COMMANDS = (
    ("--help",),
    ("--version",),
    *((name, "--help") for name in ("check", "compare", "replay", "fuzz", "pitfalls", "plot", "golden")),
    ("golden", "verify", "--help"),
)


def timed(argv: list[str], folder: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(
            f"{' '.join(argv[3:]) or 'python -c pass'} failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"
        )
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (best taken); default 5")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NANOLM_", "HYPOTHESIS_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    baseline: list[float] = []
    runs: dict[tuple[str, ...], list[float]] = {c: [] for c in COMMANDS}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for command in COMMANDS:  # warm the file cache
            timed([sys.executable, "-c", CLI, *command], folder, env)
        for _ in range(args.repeat):  # alternate, so that a change of load hits both sides alike
            for command in COMMANDS:
                baseline.append(timed([sys.executable, "-c", "pass"], folder, env))
                runs[command].append(timed([sys.executable, "-c", CLI, *command], folder, env))
        left = sorted(p.name for p in folder.iterdir())
    base = min(baseline)
    print(f"{'python -c pass':34s} best {base:5.3f} s")
    worst = 0.0
    for command, times in runs.items():
        best = min(times)
        worst = max(worst, best)
        label = "nanolm-verify " + " ".join(command)
        print(f"{label:34s} best {best:5.3f} s   +{best - base:5.3f} s   ×{best / base:4.1f}")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"slowest {worst:.3f} s (target ≤ {TARGET} s); {os.cpu_count()} CPUs, load average {load}")
    if left:
        print(f"left in the working directory: {', '.join(left)}")
    return 0 if worst <= TARGET and not left else 1


if __name__ == "__main__":
    sys.exit(main())
