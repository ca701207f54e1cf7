"""Where worker processes come from: a fork server that has imported torch, Hypothesis and the laws once.

Importing torch and the law library takes seconds (≈ 4 s on the two-core CI machines); a worker started with
``spawn`` pays it again, and so does every replacement of a worker the subject killed. Workers are instead
forked from multiprocessing's fork server, a fresh interpreter (never a fork of the verifier, whose torch may
have run threads) that imports :data:`PRELOAD` and nothing else — no subject, no torch operation, so no thread
pool exists to be forked. The verifier starts it with :func:`warm_up` as early as it can (the command line
does so before its own imports), so the server's imports run beside the verifier's on another core.

A forked worker inherits the server's environment, not the verifier's: :func:`environment` snapshots the
verifier's at the moment a pool starts, and the worker installs it before doing anything else (sys.path and
the working directory travel with multiprocessing's own preparation data, as for ``spawn``). Where the
platform has no fork server (Windows), workers are spawned. The server holds /dev/null, never the caller's
output, and ends with the verifier.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import signal
from multiprocessing.context import BaseContext

__all__ = ["PRELOAD", "adopt_orphans", "context", "environment", "install_environment", "warm_up"]

# torch, numpy, Hypothesis, golden, the law library and the runner; and what torch.autograd.grad imports at its first
# call (symbolic shapes: sympy, ≈ 1-2 s), which the judge and the subject process of every worker would pay again
PRELOAD = ["properties.running.workers", "torch.fx.experimental.symbolic_shapes"]


def context() -> BaseContext:
    """The multiprocessing context workers are started from (fork server with PRELOAD, else spawn); the fork
    server runs (started as :func:`warm_up` starts it) when this returns."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    _ensure_server()
    return ctx


def warm_up() -> None:
    """Start the fork server now, without waiting for its imports (a no-op when it runs or cannot run)."""
    context()


def _ensure_server() -> None:
    """Start the fork server if it does not run, with /dev/null for its stdout and stderr: a worker (and whatever
    the subject forks from one) holds the server's "alive" pipe, so the server can outlive the run — it must not
    hold the caller's output open then (a caller reading to the end would wait for ever). It is ended with this
    process (atexit), whoever still holds the pipe."""
    from multiprocessing import forkserver

    null = os.open(os.devnull, os.O_RDWR)  # (every time: a server that died is restarted here too)
    saved = [os.dup(1), os.dup(2)]
    try:
        for fd in (1, 2):
            os.dup2(null, fd)
        forkserver.ensure_running()
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(null)
    if not _ending:
        _ending.append(True)
        atexit.register(_end_server)


_ending: list[bool] = []


def _end_server() -> None:
    """At exit: end the fork server this process started (SIGTERM), should anything still hold it alive."""
    from multiprocessing import forkserver

    pid = forkserver._forkserver._forkserver_pid
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def environment() -> dict[str, str]:
    """The verifier's environment, for a worker to install (:func:`install_environment`)."""
    return dict(os.environ)


def install_environment(env: dict[str, str]) -> None:
    """In a worker: the verifier's environment replaces the one inherited from the fork server."""
    os.environ.clear()
    os.environ.update(env)


def adopt_orphans() -> None:
    """Make this process (a judge or a subject process) the subreaper of its descendants (Linux): a process the
    subject starts that leaves the process group (setsid) and loses its parent is re-parented to it, not to init —
    so the verifier still finds it among the worker's descendants and ends it with the worker
    (``workers._descendants``)."""
    import contextlib

    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
