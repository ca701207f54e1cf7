"""Sensitivity of the golden Block laws, stage by stage (issue 18, item 3).

An emulated Block (``tests/numerics/orders.block``, every operation in its compute dtype) errs at ONE stage — the
norms' r, the attn-norm's output, the q/k/v projections, the RoPE angles, the cos/sin tables, the scores, the
probabilities, the softmax sum, p·v, W_o's output, the SiLU gate, the up projection, W_down's output — by k units
of roundoff u (each value
times 1 + k·u·ξ, ξ = ±1 at random; u of the compute dtype, or of the storage dtype t for 16-bit storage, where an
accepted convention may round every stage to t), and is judged against golden with the law's bound. For each stage
the smallest k = 2^j at which the law fails: the law sees an error k times a correct rounding of that stage.
A bf16 stage in an fp32 block errs by ~2^15 u_fp32.

    python bench/sensitivity.py                 # the stored T = 1024 fp32 cases and a drawn-size sharp case
    python bench/sensitivity.py --dtype bf16
    python bench/sensitivity.py --dtype bf16 --stage norm_out   # one stage only

Prints one line per case and stage: k* (or "> 2^16"), and the headroom of the unperturbed emulation.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import golden
from golden import corpus
from golden.formats import fmt
from nanolm_core import ModelConfig
from properties.library import strategies as S
from properties.numerics import bounds, ulp
from tests.numerics import orders

LARGEST = 16  # k up to 2^16 (a bf16 stage in fp32 is ~2^15)


def _cases(dtype: torch.dtype) -> list[tuple[str, torch.Tensor, dict, ModelConfig, golden.Golden]]:
    out = []
    for case in corpus.cases("block"):
        if case.dtype == dtype and case.tensor("x").shape[1] >= 64:
            params = {k: case.tensor(k) for k in golden.BLOCK_PARAMS}
            out.append((case.id, case.tensor("x"), params, case.config, case.golden))
    cfg = ModelConfig(dim=32, n_heads=4, n_kv_heads=2, ffn_dim=64, max_seq_len=16)
    x = torch.from_numpy(np.random.default_rng(5).standard_normal((1, 6, 32))).to(dtype)
    params = S.block_params(cfg, dtype, seed=6, scale=1.0, logit_scale=4.0)
    out.append(("drawn size T=6, q/k scale 4", x, params, cfg, golden.block(x, params, cfg)))
    return out


def headroom(y: np.ndarray, gold: golden.Golden, b: bounds.Bound, J: np.ndarray, dtype: torch.dtype) -> float:
    g = golden.Golden(gold.hi[:, J], gold.lo[:, J])
    err = ulp.abs_error(torch.from_numpy(np.ascontiguousarray(y[:, J])).to(dtype), g)
    return float(np.max(err / b.allowed))


def emulate(X: np.ndarray, P: dict, cfg: ModelConfig, dtype: torch.dtype, order: str, stage: str, rel: float,
            seed: int) -> np.ndarray:  # fmt: skip
    """The emulated Block with the values of ``stage`` times 1 + rel·ξ, ξ = ±1 at random (seeded)."""
    rng = np.random.default_rng(seed)

    def perturb(name: str, v: np.ndarray) -> np.ndarray:
        return (v * (1 + rel * rng.choice((-1.0, 1.0), v.shape))).astype(v.dtype) if name == stage else v

    return orders.block(X, P, cfg, dtype, order, perturb=perturb)


def _seen(j: int, *, X, P, cfg, dtype, order, stage, uc, gold, b, J) -> bool:
    """Does the law fail the emulation that errs by 2^j·u_c at ``stage``?"""
    return headroom(emulate(X, P, cfg, dtype, order, stage, 2.0**j * uc, j), gold, b, J, dtype) > 1


def threshold(seen) -> int | None:
    """The smallest j in 0 … LARGEST with seen(j) (bisection: seen grows with j), None if not even seen(LARGEST)."""
    if not seen(LARGEST):
        return None
    lo, hi = -1, LARGEST
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if seen(mid) else (mid, hi)
    return hi


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="fp32", choices=("fp32", "bf16", "fp16", "fp64"))
    parser.add_argument("--order", default="pairwise", help="the emulation's reduction order (tests/numerics/orders)")
    parser.add_argument(
        "--stage",
        action="append",
        choices=orders.STAGES,
        help="perturb only this stage (repeatable; default: every stage)",
    )
    args = parser.parse_args(argv)
    dtype = fmt(args.dtype).dtype
    # the unit: one rounding of the stage as an accepted convention may commit it — to t for 16-bit storage (HF
    # rounds every stage to t), in c otherwise
    uc = fmt(dtype).u if dtype in (torch.float16, torch.bfloat16) else fmt(bounds.compute_dtype(dtype)).u
    for name, x, params, cfg, gold in _cases(dtype):
        T = x.shape[1]
        J = S.long_positions(T)
        b = bounds.block(x, params, cfg, dtype, random_weights=True, drawn=True, tokens=J)
        P = {k: v.double().numpy() for k, v in params.items()}
        X = x.double().numpy()
        base = headroom(orders.block(X, P, cfg, dtype, args.order), gold, b, J, dtype)
        print(f"{name} [{args.dtype}]: unperturbed headroom {base:.3g}", flush=True)
        for stage in args.stage or orders.STAGES:
            seen = functools.partial(_seen, X=X, P=P, cfg=cfg, dtype=dtype, order=args.order, stage=stage, uc=uc,
                                     gold=gold, b=b, J=J)  # fmt: skip
            k = threshold(seen)
            print(f"  {stage:12s} k* " + (f"= 2^{k}" if k is not None else f"> 2^{LARGEST}"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
