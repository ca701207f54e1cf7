"""The 2017 post-norm block: h = norm(x + attn(x)), out = norm(h + ffn(h)) — every layer rescales the gradient."""

import nanolm_core


class Block(nanolm_core.PostNormBlock):
    pass
