"""Week 6 exercises (English): RMSNorm, SwiGLU and the pre-norm Block, from scratch.

Fill in the bodies marked ``TODO`` in ``exercises_en/modules.py`` (RMSNorm, SwiGLU) and
``exercises_en/model.py`` (Block); every docstring gives the formula and the shapes. Then check, from the
repository root (the course's own command, then the budget test and every law):

    NANOLM_IMPL=exercises_en pytest tests/test_modules.py -k "rmsnorm or swiglu" -v
    NANOLM_IMPL=exercises_en pytest tests/test_budget.py -v       # F = 8D/3 (needs your Block)
    nanolm-verify check exercises_en                              # every law, the Block's too, with ULP errors

A part you have not written yet is reported "not implemented" (skipped), never as a crash. The
names (``weight``, ``w_gate``, ``w_up``, ``w_down``, ``attn_norm``, ``attn``, ``ffn_norm``, ``ffn``) are
part of the contract: the tests load weights into them with ``load_state_dict(strict=True)``.
Stuck? ``nanolm-verify pitfalls`` shows the common mistakes and the test that catches each one.
"""

from .model import Block
from .modules import RMSNorm, SwiGLU

__all__ = ["Block", "RMSNorm", "SwiGLU"]
