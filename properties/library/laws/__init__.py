"""The laws, one module per component. Importing this package registers them all in ``LAWS``."""

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
