"""Wrappers a user would write around third-party norms and decoders (issue 37), in plain torch: each module
reproduces one library's arithmetic — HF T5/Llama/Gemma/OLMo2/Qwen2 norms, torchtune, keras' centring, flax under
XLA, HF/torchtune decoders computing their norms and RoPE in fp32 inside an fp64 layer — without importing the
library. ``WRAPPERS`` names each with what a correct diagnosis of its failures says (``bench/diagnosis.py``,
``tests/library/test_diagnosis.py``): the declaration it needs, "centring", or None for a genuine bug."""
