"""Hypothesis profiles of the suite: ``ci`` (derandomized, fast), ``dev`` (default), ``thorough`` (≥ 1000 examples).

Selected by ``HYPOTHESIS_PROFILE``, the pytest option ``--profile`` or ``nanolm-verify check --profile``.
``max_examples`` is the budget of a cheap law; a law declares its cost (``@law(..., cost=k)``) and runs
``max(1, max_examples // k)`` examples, so a golden comparison at high precision costs what it is worth.
``slow`` profiles also draw the large-D tier (D up to 8192).
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Hypothesis is imported when settings are made, not with the profile table: the pytest plugin
    from hypothesis import settings  # reads the names at start-up in every project where the package is installed

__all__ = ["DEFAULT_PROFILE", "ENV_VAR", "PROFILES", "Profile", "get", "register", "resolve", "settings_for"]

ENV_VAR = "HYPOTHESIS_PROFILE"
DEFAULT_PROFILE = "dev"


@dataclasses.dataclass(frozen=True)
class Profile:
    """One named budget: examples per cheap law, derandomization, whether the slow (large-D) tier is drawn, and the
    per-law time limit (seconds) after which an isolated run stops the implementation and reports a timeout."""

    name: str
    max_examples: int
    derandomize: bool
    slow: bool = False
    print_blob: bool = False
    timeout: float = 600.0
    shrink_budget: float = 60.0  # seconds of shrinking after the first failure; then the smallest example so far
    search_budget: float | None = None  # seconds of searching per law × dtype × device (None: max_examples only);
    # a law still passing then stops and passes with the examples run so far — bounds the profile's duration
    case_budget: float | None = None  # seconds one enumerated case of a code-path-size law may be estimated to cost
    # (laws/paths.py: extrapolated from the smaller cases run before it); a case estimated over it is left unjudged
    # in this profile, and the result says so (None: every case runs)
    stated: float = 0.0  # the whole check of the reference on two cores with the workers, as the README states it
    # (seconds; measured by bench/check_workers.py, never asserted by a timed test)

    def settings(self, cost: int = 1, database: object = None, **overrides: object) -> settings:
        """The Hypothesis settings for a law of cost ``cost`` under this profile (``database``: a shared example
        database, replayed first; it needs a seeded run rather than a derandomized one)."""
        from hypothesis import HealthCheck, Phase, settings

        base = dict(
            max_examples=max(1, self.max_examples // max(1, cost)),
            derandomize=self.derandomize and database is None,
            deadline=None,  # numerics of large shapes vary in time; the profile budget bounds the run instead
            database=database,  # none by default: a run is reproduced by (profile, seed), never by local state
            print_blob=self.print_blob,
            report_multiple_bugs=False,  # one clear counterexample per law
            suppress_health_check=list(HealthCheck),  # large tensors are slow to draw on purpose
            phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
        )
        base.update(overrides)
        return settings(**base)


PROFILES: dict[str, Profile] = {
    # print_blob off: a failure is replayed from its counterexample file (nanolm-verify replay), not a blob
    # case_budget 90 s: a compiled or eager case costs ≤ a few seconds at 2^17 rows, an interpreted Triton one (a
    # program per row, milliseconds each) minutes — docs/adapters.md "What an interpreted check costs"
    "ci": Profile(
        "ci", max_examples=8, derandomize=True, timeout=180.0, shrink_budget=20.0, case_budget=90.0, stated=30
    ),
    "dev": Profile("dev", max_examples=50, derandomize=False, timeout=600.0, shrink_budget=60.0, stated=180),
    "thorough": Profile(
        "thorough",
        max_examples=1000,
        derandomize=False,
        slow=True,
        timeout=900.0,
        shrink_budget=120.0,
        search_budget=8.0,  # ≈ 170 law × dtype tasks over 2 workers: the whole run within ~15 min on two cores
        stated=900,
    ),
}


def get(name: str) -> Profile:
    """The profile called ``name``; ValueError naming the known ones otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; expected one of {', '.join(PROFILES)}") from None


def resolve(name: str | None = None) -> Profile:
    """Explicit name > $HYPOTHESIS_PROFILE (if it is one of ours) > dev."""
    if name:
        return get(name)
    env = os.environ.get(ENV_VAR)
    return PROFILES.get(env or DEFAULT_PROFILE, PROFILES[DEFAULT_PROFILE])


def settings_for(name: str, cost: int = 1) -> settings:
    """Shortcut: Hypothesis settings of profile ``name`` for a law of cost ``cost``."""
    return get(name).settings(cost)


def register() -> None:
    """Register the profiles with Hypothesis under their names (so HYPOTHESIS_PROFILE=ci works for any test)."""
    from hypothesis import settings

    for profile in PROFILES.values():
        settings.register_profile(profile.name, profile.settings())
