"""One check for tests that run a rewritten graph against the function it was traced from."""

from __future__ import annotations

import torch

__all__ = ["assert_same_results", "targets"]


def targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def _bits(t):
    # Bitwise (NaN payloads included), whatever the layout.
    t = t.contiguous()
    return t.view(torch.uint8) if t.dtype != torch.bool and t.dim() > 0 else t


def assert_same_results(fn, args, gm):
    """``gm`` on clones of ``args`` returns what ``fn`` returns (dtype, shape, strides and
    bits) and leaves the clones as ``fn`` leaves its own."""
    want_args = [a.clone() for a in args]
    got_args = [a.clone() for a in args]
    want, got = fn(*want_args), gm(*got_args)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, (tuple, list)) else (got,)
    for w, g in zip(want, got, strict=True):
        assert w.dtype == g.dtype and w.shape == g.shape and w.stride() == g.stride(), gm.code
        assert torch.equal(_bits(w), _bits(g)), gm.code
    for w, g in zip(want_args, got_args, strict=True):
        assert torch.equal(_bits(w), _bits(g)), gm.code
