"""Ctrl-C and SIGTERM outside a run session, for the command line (a session installs its own handlers, which
return the results so far: ``workers.signals_interrupt``). Before a run a signal stops the command at once
(:class:`Stopped`); once a run has returned (:func:`defer_stops`) it is remembered instead, so that the table and
the report are still written, and the command then exits 128 + it. Light: the command line imports it first."""

from __future__ import annotations

import signal

__all__ = ["Stopped", "defer_stops", "pending_stop", "stop_on_signals"]


class Stopped(BaseException):
    """Ctrl-C or SIGTERM outside a run session (start-up, parsing): ``signum`` is the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_stops: dict[str, int | bool | None] = {"defer": False, "pending": None}


def stop_on_signals() -> None:
    """The command line's handlers for SIGINT and SIGTERM outside a session (a session installs its own, which
    return the results so far): before a run they raise :class:`Stopped`; once a run has returned
    (:func:`defer_stops`) they are remembered instead, so that the table and the report are still written —
    :func:`pending_stop` then names the signal, and the command exits 128 + it."""

    def handler(signum: int, frame: object) -> None:
        if _stops["defer"]:
            _stops["pending"] = _stops["pending"] or signum
        else:
            raise Stopped(signum)

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, handler)


def defer_stops() -> None:
    """From now on a signal stops the command after its output is written (the run has returned)."""
    _stops["defer"] = True


def pending_stop() -> int | None:
    """The signal remembered since :func:`defer_stops` (None: none came)."""
    pending = _stops["pending"]
    return int(pending) if pending else None
