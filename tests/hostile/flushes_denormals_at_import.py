"""A module that turns on flush-to-zero of subnormals when imported; its RMSNorm is the reference."""

import torch

from nanolm_core import RMSNorm  # noqa: F401

torch.set_flush_denormal(True)
