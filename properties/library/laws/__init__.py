"""The laws. Importing this package registers them all in ``LAWS``.

Where a law goes:

* a law along an axis that more than one component has is a *generic family*, one module per axis
  (``layout.py``, ``devices.py``, ``lifecycle.py``, ``paths.py``, ``stored.py``, ``domain.py``, ``axes.py``): a
  function decorated ``@families.family("<axis>", axis="…")`` that defines the law for one component record with
  ``@law(record.name)`` and reads only the record (its cases, build/call, golden values, bounds, and the data the
  family needs: ``record.paths``, ``record.corpus``, ``record.domain`` …) — written once, applied to every record,
  and to a component added later; a record it cannot apply to says why (``not_applicable``, or the family's
  ``reason`` derived from the record);
* a law of one component goes in that component's module (``rmsnorm.py``, ``swiglu.py``, ``block.py``,
  ``add_rmsnorm.py``): ``@law("<Component>")`` — nowhere else (``tests/library/test_no_component_names.py``).

The docstring is the law; a catalogue entry (``properties.gallery``) proves it; ``docs/matrix.md`` shows where it
sits (``nanolm-verify check --list --matrix --markdown docs/matrix.md``). Recipe: docs/ARCHITECTURE.md, "Where a new
thing goes".
"""

from properties.library.laws import (  # noqa: F401
    add_rmsnorm,
    axes,
    block,
    devices,
    domain,
    layout,
    lifecycle,
    module,
    paths,
    rmsnorm,
    stored,
    swiglu,
)
from properties.library.table import LAWS

__all__ = ["LAWS"]
