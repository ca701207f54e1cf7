"""Week 6 exercises: RMSNorm, SwiGLU and the pre-norm Block, from scratch.

Fill in the bodies marked ``TODO`` in ``exercises/modules.py`` (RMSNorm, SwiGLU) and
``exercises/model.py`` (Block); every docstring gives the formula and the shapes. Then check:

    NANOLM_IMPL=exercises pytest tests/conformance/test_modules.py -k "rmsnorm or swiglu" -v
    NANOLM_IMPL=exercises pytest tests/conformance/test_modules.py -v          # the Block too
    nanolm-verify check exercises                                  # every law, with ULP errors

A part you have not written yet is reported "not implemented" (skipped), never as a crash. The
names (``weight``, ``w_gate``, ``w_up``, ``w_down``, ``attn_norm``, ``attn``, ``ffn_norm``, ``ffn``) are
part of the contract: the tests load weights into them with ``load_state_dict(strict=True)``.
Stuck? ``nanolm-verify pitfalls`` shows the common mistakes and the test that catches each one.
"""

from exercises.model import Block
from exercises.modules import RMSNorm, SwiGLU

__all__ = ["Block", "RMSNorm", "SwiGLU"]
