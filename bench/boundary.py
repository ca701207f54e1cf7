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

Where the cost lies (check --profile ci of the reference, one judge, 252 law runs; cProfile of both processes): a
request's work is spread thin — JSON, packing and unpacking, the subject's two global-state snapshots (two torch ops
each), its parameter checks after each step, the byte copies — and a module build is the largest item: construct,
``.to``, ``load_state_dict``, ``eval`` are 4 round trips (~1.3 ms of CPU over building in process, 2,231 builds);
13,986 round trips per check (forward 3,566, train 2,277, to 2,258, load_state_dict 2,243, construct 2,231,
backward 912, one per law to establish the state, read 125, sync 98); ~385 MB each way. One message per frame
(since 2026-12: the header, then the buffers, in one write) halved the messages (29,367 → 13,986 from the judge).
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
