"""Correct implementations that compute differently from the reference: the laws must pass all of them.

- ``frms_norm``: the ``torch`` adapter (``F.rms_norm``, ``F.linear``, SDPA attention) with RoPE in the input dtype;
- ``fp64_internal``: everything evaluated in fp64 and rounded once to the input dtype (the most accurate);
- ``two_roundings``: HF-Llama's RMSNorm order (x·r rounded to the input dtype, then ·w) and a SwiGLU whose
  silu(W_g x) and product are rounded separately, intermediates in the storage dtype;
- ``batch_invariant``: SwiGLU one token at a time and the Block one sequence at a time (bitwise batch-invariant),
  whose weight gradients autograd sums over the tokens in the parameter's dtype (declared: ``accumulation_dtype``).
"""

CORRECT = (
    "nanolm_core",
    "tests.correct_impls.frms_norm",
    "tests.correct_impls.fp64_internal",
    "tests.correct_impls.two_roundings",
    "tests.correct_impls.batch_invariant",
)
