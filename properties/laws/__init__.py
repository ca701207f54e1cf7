"""The laws, one module per component; importing this package registers them all in properties.registry.LAWS."""

from properties.laws import block, budget, rmsnorm, swiglu  # noqa: F401  (registration)
