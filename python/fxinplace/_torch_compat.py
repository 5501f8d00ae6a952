"""What fxinplace asks of torch that older releases spell differently (a shim per question).

The project builds and tests against torch 2.13; the GPU machines it is checked on carry
older releases (2.11), where some helpers of ``torch._library.utils`` do not exist yet.
"""

from __future__ import annotations

import torch

__all__ = ["has_out_semantics", "out_by_schema"]


def has_out_semantics(op: torch._ops.OpOverload) -> bool:
    """Whether ``op``'s mutable arguments are write-only output buffers (an ``out=``
    overload): torch's ``out`` tag where torch has it, else ``out_by_schema``."""
    out_tag = getattr(torch.Tag, "out", None)
    return out_tag in op.tags if out_tag is not None else out_by_schema(op)


def out_by_schema(op: torch._ops.OpOverload) -> bool:
    """The shape of an ``out=`` schema: written keyword-only arguments, each returned
    unless the op returns nothing (``add.out(Tensor self, Tensor other, *, Scalar alpha=1,
    Tensor(a!) out) -> Tensor(a!)``; a few also update positional state, as
    ``_native_batch_norm_legit.out``'s running stats)."""
    schema = op._schema
    outs = [a for a in schema.arguments if a.kwarg_only and a.alias_info is not None]
    outs = [a for a in outs if a.alias_info.is_write]
    returned: set[str] = set()
    for r in schema.returns:
        if r.alias_info is not None:
            returned |= set(r.alias_info.before_set)
    if not schema.returns:  # -> (): a list out= op (`_cudnn_rnn_backward.out`)
        return bool(outs)
    return bool(outs) and all(set(a.alias_info.before_set) <= returned for a in outs)
