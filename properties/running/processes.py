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
platform has no fork server (Windows), workers are spawned.
"""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.context import BaseContext

__all__ = ["PRELOAD", "context", "environment", "install_environment", "warm_up"]

# torch, numpy, Hypothesis, golden, the law library and the runner; and what torch.autograd.grad imports at its first
# call (symbolic shapes: sympy, ≈ 1-2 s), which the judge and the subject process of every worker would pay again
PRELOAD = ["properties.running.workers", "torch.fx.experimental.symbolic_shapes"]


def context() -> BaseContext:
    """The multiprocessing context workers are started from (fork server with PRELOAD, else spawn)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def warm_up() -> None:
    """Start the fork server now, without waiting for its imports (a no-op when it runs or cannot run)."""
    if context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def environment() -> dict[str, str]:
    """The verifier's environment, for a worker to install (:func:`install_environment`)."""
    return dict(os.environ)


def install_environment(env: dict[str, str]) -> None:
    """In a worker: the verifier's environment replaces the one inherited from the fork server."""
    os.environ.clear()
    os.environ.update(env)
