"""The README's correct RMSNorm with one behaviour injected: its output × 1.05 (≈ 7.7·10⁵ ULP in fp32 against a
bound of a few ULP). The plain wrong subject every hostile subject here also is: an honest verdict fails it."""

import nanolm_core


class RMSNorm(nanolm_core.RMSNorm):
    def forward(self, x):
        return super().forward(x) * 1.05
