"""The laws. Importing this package registers them all in ``LAWS``.

Where a law goes:

* a law every component obeys is a *generic family*, one module per axis (``layout.py``, ``devices.py``,
  ``lifecycle.py``): a function decorated ``@families.family("<axis>", axis="…")`` that defines the law for one
  component record with ``@law(record.name)`` and reads only the record (its cases, build/call, golden values,
  bounds) — written once, applied to every record, and to a component added later;
* a law of one component goes in that component's module (``rmsnorm.py``, ``swiglu.py``, ``block.py``,
  ``add_rmsnorm.py``): ``@law("<Component>")``;
* a module of per-component laws along one axis (``paths.py``, ``stored.py`` …) says its axis in
  ``AXIS``; a component it does not cover gives the reason in its record (``not_applicable``).

The docstring is the law; a catalogue entry (``properties.gallery``) proves it; ``docs/matrix.md`` shows where it
sits (``nanolm-verify check --list --matrix --markdown docs/matrix.md``). Recipe: docs/ARCHITECTURE.md, "Where a new
thing goes".
"""

from properties.library.laws import (  # noqa: F401
    add_rmsnorm,
    axes,
    block,
    budget,
    devices,
    domain,
    layout,
    lifecycle,
    module,
    paths,
    rmsnorm,
    sequence,
    stored,
    swiglu,
)
from properties.library.table import LAWS

__all__ = ["LAWS"]
