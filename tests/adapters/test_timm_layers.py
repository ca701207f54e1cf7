"""Issue 37: ``check timm`` skipped every law ("0 passed, 220 skipped") because the adapter imported all of timm,
whose package ``__init__`` imports torchvision. The adapter imports only timm's ``layers/norm.py`` and
``layers/mlp.py``: shown on a stand-in timm whose ``__init__`` files fail as a mismatched torchvision does."""

from __future__ import annotations

import importlib
import sys
import textwrap

import torch

FAKE = {
    "timm/__init__.py": "raise ImportError('operator torchvision::nms does not exist')\n",
    "timm/layers/__init__.py": "raise ImportError('operator torchvision::nms does not exist')\n",
    "timm/layers/fast_norm.py": """
        import torch

        def rms_norm(x, normalized_shape, weight=None, eps=1e-6):
            v = x.pow(2).mean(-1, keepdim=True)
            x = x * torch.rsqrt(v + eps)
            return x * weight if weight is not None else x
        """,
    "timm/layers/norm.py": """
        import torch
        from torch import nn

        from .fast_norm import rms_norm

        class RmsNorm(nn.Module):
            def __init__(self, channels, eps=1e-6):
                super().__init__()
                self.eps, self.weight = eps, nn.Parameter(torch.ones(channels))

            def forward(self, x):
                return rms_norm(x, self.weight.shape, self.weight, self.eps)
        """,
    "timm/layers/mlp.py": """
        from torch import nn
        import torch.nn.functional as F

        class SwiGLU(nn.Module):
            def __init__(self, in_features, hidden_features, out_features, bias=False):
                super().__init__()
                self.fc1_g = nn.Linear(in_features, hidden_features, bias=bias)
                self.fc1_x = nn.Linear(in_features, hidden_features, bias=bias)
                self.fc2 = nn.Linear(hidden_features, out_features, bias=bias)

            def forward(self, x):
                return self.fc2(F.silu(self.fc1_g(x)) * self.fc1_x(x))
        """,
}


def test_the_timm_adapter_runs_on_timms_layer_files_without_importing_timm(tmp_path, monkeypatch):
    for name, text in FAKE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "timm" or m.startswith(("timm.", "_nanolm_timm_layers"))]:
        monkeypatch.delitem(sys.modules, name)
    import properties.adapters.timm as adapter

    try:
        adapter = importlib.reload(adapter)
        assert adapter.SKIP_REASON is None, adapter.SKIP_REASON
        assert "timm" not in sys.modules  # timm's own __init__ never ran (it raises here)
        norm = adapter.RMSNorm(8)
        x = torch.randn(3, 8, dtype=torch.float64)
        torch.testing.assert_close(norm.double()(x), x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))
        mlp = adapter.SwiGLU(8, 16).double()
        ref = mlp.w_down(torch.nn.functional.silu(mlp.w_gate(x)) * mlp.w_up(x))
        torch.testing.assert_close(mlp(x), ref)
    finally:
        for name in [m for m in sys.modules if m.startswith("_nanolm_timm_layers")]:
            del sys.modules[name]
        monkeypatch.undo()
        importlib.reload(adapter)  # the real environment's verdict again
