"""The process boundary's cost: a ``check`` run with the subject in a process of its own vs imported by the judge.

    python bench/boundary.py                       # reference, ci profile, default workers, boundary off then on
    python bench/boundary.py torch --repeat 3      # best of three of each
    python bench/boundary.py --only RMSNorm --workers 1

    python bench/boundary.py --cpu                 # load-independent: CPU seconds and round trips, one judge

Both runs go through the run session as ``check`` does (``session.run``: worker pools, the same plan, the same seed),
one after the other in this process, so they see the same machine load; the CLI's start-up and rendering (the same
for both) are left out. Prints each run's wall-clock time, the ratio (the target: at most 1.3), the machine's CPU
count and load average, and whether both runs gave the same verdicts (status and cause per law × dtype). Exit
status 1 when the verdicts differ or a run does not pass what the other passes.

``--cpu`` measures what a loaded machine blurs less: one judge — a fresh process with what the fork server preloads
for workers, so neither mode finds the other's imports and caches warm — runs every planned law in turn, against a
subject process (``subject_server.Subject``, as the pytest plugin does), then another against the implementation
imported there; each prints the CPU seconds of the judge and of the subject process (Linux: from /proc), the round
trips and the bytes each way. The ratio of the totals is the boundary's cost in CPU.

Where the cost lies (check --profile ci of the reference, one judge, 256 law runs; cProfile of both processes, the
bytes by request kind): a request's own work is spread thin — JSON, packing and unpacking, the subject's two
global-state snapshots, its parameter checks — so the cost goes with the round trips and the bytes. Until
2026-12-07 a module build was 4 round trips (construct, ``.to``, ``load_state_dict``, ``eval``), each answer
describing the module again: 14,498 round trips per check (forward 3,746, train 2,349, load_state_dict 2,335, to
2,326, construct 2,303, backward 916, establish 256, read 125, sync 118), 413 MB sent and 621 MB received, and per
MB the copies cost most (the frame joined into one message, multiprocessing's reader gathering it in a BytesIO,
then a copy into each tensor's storage). Since then: a build is one request (``remote.Build``: 2,296 builds;
7,636 round trips in all), a parameter loaded with exactly the bytes the judge sent comes back as a reference to
the judge's tensor (received 621 → 242 MB), and a frame is written from the tensors' bytes (``os.writev``) and each
buffer read into its own fresh storage (an 8 MB in, 8 MB out forward: 14–26 → 7.5–9 ms of CPU, in process 2–4).
``--cpu`` on the unchanged code, then after, on this 2-core machine shared with other work: 1.54x (45.5 s vs
29.7 s, load ~2) → 1.20x (57.3 s vs 48.0 s, load 4.7–5.5). Under load 6–9 the ratio is noise (the unchanged code
1.22x and 1.45x, the new 1.19x and 1.41x); the subject's CPU is the steadier sign: 12.0–12.3 s → 9.7 s at load ~7.

What is left is per request, not per byte: a remote forward of a small RMSNorm cost 1.3 ms of CPU (judge 0.5, subject
0.8) against 0.05 ms in process, a build 1.5 against 0.2 ms, in some fifty steps of 5–15 µs each (the settings'
snapshots, the context, packing, JSON, the checks of every field). Since: the socket pair's buffers 4 MB each way
(``remote.wire``: a frame of megabytes had crossed in hundreds of writes, each waking the reader), a snapshot 11 →
7 µs and one fewer per guard and per build step, the context's settings set only where they differ, a frame's plain
values packed without a call each: a forward 1.0, a build 1.2 ms. On the idle machine, --repeat 3 before: 1.35x
(35.5 s vs 26.3 s), --cpu 1.42x; after, --repeat 4: 1.20x (30.6 s vs 25.5 s), --cpu 1.24x (60.0 s vs 48.4 s).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from properties.running import processes, session


def timed(impl: str, selection: session.Selection, options: session.RunOptions) -> tuple[float, dict]:
    start = time.perf_counter()
    run = session.run([impl], selection, options)
    elapsed = time.perf_counter() - start
    verdicts = {(r.law_id, r.dtype, r.device): (r.status, r.cause) for r in run.results}
    passed = sum(s == "passed" for s, _ in verdicts.values())
    where = "subject process (boundary)" if options.boundary else "in the judge (no boundary)"
    print(f"{where:28s} {elapsed:7.1f} s   {len(verdicts)} results, {passed} passed", flush=True)
    return elapsed, verdicts


def _cpu_seconds(pid: int | None) -> float:
    """A process's user + system CPU seconds (Linux /proc; 0 elsewhere or without a process)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu(impl: str, selection: session.Selection, boundary: bool) -> dict:
    """Every planned law run by this process as a worker's judge runs it, against a subject process (or the
    implementation imported here): CPU seconds of both, round trips, bytes each way, verdicts."""
    import torch

    from properties.library import state
    from properties.running import loading, subject_server

    torch.set_num_threads(1)
    subject = subject_server.Subject(impl) if boundary else None
    judge = subject.implementation() if subject else loading.load(impl)
    link = subject.link if subject else None
    tasks = selection.tasks()
    start, theirs = time.process_time(), _cpu_seconds(subject.pid if subject else None)
    verdicts = {}
    for task in tasks:
        state.establish(1)
        if link is not None:
            link.request("establish", threads=1)
        r = task.run(judge)
        verdicts[(r.law_id, r.dtype, r.device)] = (r.status, r.cause)
    out = {
        "judge": time.process_time() - start,
        "subject": _cpu_seconds(subject.pid) - theirs if subject else 0.0,
        "traffic": list(link.traffic) if link else [0, 0, 0],
        "verdicts": verdicts,
    }
    if subject:
        subject.close()
    requests, sent, got = out["traffic"]
    where = "subject process (boundary)" if boundary else "in the judge (no boundary)"
    print(f"{where:28s} judge {out['judge']:6.1f} s CPU, subject {out['subject']:5.1f} s CPU, "
          f"{requests} round trips, {sent / 1e6:.0f} MB sent, {got / 1e6:.0f} MB received", flush=True)  # fmt: skip
    return out


def _cpu_in_child(argv: list[str], mode: str) -> dict:
    """:func:`cpu` in a fresh process that imported what workers find imported (``processes.PRELOAD``)."""
    command = [sys.executable, __file__, *argv, "--cpu-one", mode]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    lines = done.stdout.strip().splitlines()
    print("\n".join(lines[:-1]), flush=True)
    out = json.loads(lines[-1])
    out["verdicts"] = {tuple(v[:3]): tuple(v[3:]) for v in out["verdicts"]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("impl", nargs="?", default="reference")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--only", default=None, help="comma-separated components or law ids")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs of each")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds and round trips of one judge, both modes")
    parser.add_argument("--cpu-one", choices=("on", "off"), help=argparse.SUPPRESS)  # (one mode, in a child)
    args = parser.parse_args(argv)
    only = tuple(args.only.split(",")) if args.only else None
    selection = session.Selection(profile=args.profile, only=only, seed=args.seed)
    if args.cpu_one:
        for name in processes.PRELOAD:  # what a worker finds imported
            importlib.import_module(name)
        out = cpu(args.impl, selection, args.cpu_one == "on")
        print(json.dumps({**out, "verdicts": sorted(map(list, ((*k, *v) for k, v in out["verdicts"].items())))}))
        return 0
    if args.cpu:
        child = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--cpu"]
        on, off = (_cpu_in_child(child, mode) for mode in ("on", "off"))
        total_on, total_off = on["judge"] + on["subject"], off["judge"]
        print(f"boundary / no boundary, CPU: {total_on / total_off:.2f}x ({total_on:.1f} s vs {total_off:.1f} s; "
              f"{on['traffic'][0] / max(1, len(on['verdicts'])):.0f} round trips per law run)")  # fmt: skip
        same = on["verdicts"] == off["verdicts"]
        print(f"verdicts identical: {same}; load average now {os.getloadavg()[0]:.2f}")
        return 0 if same else 1
    with_boundary = session.RunOptions.of(args.profile, workers=args.workers)
    without = dataclasses.replace(with_boundary, boundary=False)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.impl}, profile {args.profile}, "
          f"{with_boundary.workers} workers", flush=True)  # fmt: skip
    off, on = [], []
    for _ in range(max(1, args.repeat)):
        off.append(timed(args.impl, selection, without))
        on.append(timed(args.impl, selection, with_boundary))
    best_off, best_on = min(t for t, _ in off), min(t for t, _ in on)
    same = all(v == off[0][1] for _, v in off + on)
    print(f"boundary / no boundary: {best_on / best_off:.2f}x (best {best_on:.1f} s vs {best_off:.1f} s; target ≤ 1.3)")
    print(f"verdicts identical: {same}; load average now {os.getloadavg()[0]:.2f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
