"""No causal mask: token t attends to the future."""

import torch

import nanolm_core
from nanolm_core import attention


class _Attention(attention.Attention):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        B, T, _ = x.shape
        H, G, K = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        c = torch.float64 if x.dtype == torch.float64 else torch.float32
        q = self.wq(x).view(B, T, H, K).transpose(1, 2).to(c)
        k = self.wk(x).view(B, T, G, K).transpose(1, 2).to(c)
        v = self.wv(x).view(B, T, G, K).transpose(1, 2).to(c)
        cos, sin = attention.rope_cos_sin(T, K, cfg.rope_theta, c, x.device)
        q, k = attention.apply_rope(q, cos, sin), attention.apply_rope(k, cos, sin)
        k, v = k.repeat_interleave(cfg.n_rep, dim=1), v.repeat_interleave(cfg.n_rep, dim=1)
        probs = torch.softmax(q @ k.transpose(-2, -1) / K**0.5, dim=-1)  # the bug: no mask
        return self.wo((probs @ v).transpose(1, 2).reshape(B, T, H * K).to(x.dtype))


class Block(nanolm_core.Block):
    def __init__(self, config: nanolm_core.ModelConfig) -> None:
        super().__init__(config)
        self.attn = _Attention(config)
