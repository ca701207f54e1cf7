"""SwiGLU whose forward raises SystemExit(0)."""

import nanolm_core


class SwiGLU(nanolm_core.SwiGLU):
    def forward(self, x):
        raise SystemExit(0)
