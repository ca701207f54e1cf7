"""Shared example databases: a counterexample found once is replayed first by every later run that shares it.

``--database PATH`` is Hypothesis' directory database (one machine, or a shared file system);
``--database redis://HOST:PORT[/DB]`` is Hypothesis' Redis database (a CI fleet or a team fuzzing overnight;
needs the ``redis`` extra). Either is opened once per process.
"""

from __future__ import annotations

import functools
from pathlib import Path

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

__all__ = ["check", "open"]


def _redis(url: str) -> ExampleDatabase:
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError:
        raise ValueError(f"{url}: a Redis database needs the redis package (the nanolm-verify[redis] extra)") from None
    return RedisExampleDatabase(redis.Redis.from_url(url), key_prefix=b"nanolm-verify:")


@functools.cache
def open(spec: str) -> ExampleDatabase:
    """The example database named by ``spec``: a ``redis://`` URL or a directory (created if absent)."""
    if spec.startswith(("redis://", "rediss://", "unix://")):
        return _redis(spec)
    return DirectoryBasedExampleDatabase(Path(spec))


def check(spec: str) -> None:
    """ValueError naming the problem when ``spec`` cannot be used (a file, an unreachable server)."""
    if spec.startswith(("redis://", "rediss://", "unix://")):
        db = _redis(spec)
        try:
            db.redis.ping()
        except Exception as exc:  # any client error: unreachable, refused, auth
            raise ValueError(f"{spec}: cannot reach the Redis server ({type(exc).__name__}: {exc})") from None
        return
    path = Path(spec)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{spec}: is a file; the directory database needs a directory")
