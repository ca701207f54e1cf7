"""A module that turns grad mode off when imported; its SwiGLU is the reference."""

import torch

from nanolm_core import SwiGLU  # noqa: F401

torch.set_grad_enabled(False)
