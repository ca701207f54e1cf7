"""Memory layouts: the views of an input (``as_layout``) or a weight (``weight_as_layout``) a real caller hands a
kernel; ``LAYOUTS`` names them."""

from __future__ import annotations

import torch

# Views a real caller hands a kernel (the values are the tensor's; only strides, offset and storage differ):
#   transposed   every stride reversed (the storage is the transposed contiguous tensor: the last dim strided)
#   fused_slice  a slice of a fused buffer (…, 3·D) such as a qkv or gate/up projection: row pitch 3·D, offset D;
#                the rest of the buffer holds NaN, so a kernel that reads outside the view sees NaN
#   expanded     the first row broadcast over the leading dims (stride 0): every row shares one storage row
#   offset       contiguous strides at a storage offset > 0 (a row-slice of a larger buffer, NaN before it)
#   strided      every other row of a buffer twice as long (row pitch 2·D, NaN rows between)
LAYOUTS = ("transposed", "fused_slice", "expanded", "offset", "strided")


def as_layout(x: torch.Tensor, layout: str) -> torch.Tensor:
    """A view of ``layout`` (LAYOUTS) holding x's values (for "expanded": its first row, broadcast), on x's device."""
    D, lead = x.shape[-1], tuple(x.shape[:-1])
    rows = x.reshape(-1, D)
    nan = float("nan")
    if layout == "transposed":
        dims = tuple(range(x.dim() - 1, -1, -1))
        return x.permute(dims).contiguous().permute(dims)
    if layout == "fused_slice":
        buf = torch.full((*lead, 3 * D), nan, dtype=x.dtype, device=x.device)
        buf[..., D : 2 * D] = x
        return buf[..., D : 2 * D]
    if layout == "expanded":
        return rows[:1].clone().reshape(*(1,) * len(lead), D).expand(*lead, D)
    if layout == "offset":
        buf = torch.full((rows.shape[0] + 1, D), nan, dtype=x.dtype, device=x.device)
        buf[1:] = rows
        return buf[1:].view(*lead, D)
    if layout == "strided":
        buf = torch.full((2 * rows.shape[0], D), nan, dtype=x.dtype, device=x.device)
        buf[::2] = rows
        return buf[::2].reshape(*lead, D) if len(lead) <= 1 else buf.view(*lead[:-1], 2 * lead[-1], D)[..., ::2, :]
    raise ValueError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")


def weight_as_layout(w: torch.Tensor, layout: str) -> torch.Tensor:
    """A 1-D or 2-D weight as a view: transposed storage, a slice of a fused (stacked) buffer, or at an offset."""
    if layout == "transposed" and w.dim() == 2:
        return w.t().contiguous().t()
    if layout in ("fused_slice", "offset", "strided"):
        buf = torch.full((2 * w.shape[0], *w.shape[1:]), float("nan"), dtype=w.dtype, device=w.device)
        buf[w.shape[0] :] = w  # the second half of a stacked [other; w] buffer (gate_up fused), offset > 0
        return buf[w.shape[0] :]
    return w
