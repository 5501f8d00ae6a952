"""The shims for older torch releases agree with what torch 2.13 says itself."""

from __future__ import annotations

import torch

from fxinplace._torch_compat import has_out_semantics, out_by_schema


def _aten_overloads() -> list[torch._ops.OpOverload]:
    ops = []
    for name in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = name.partition("::")
        if namespace != "aten":
            continue
        op_name, _, overload = rest.partition(".")
        packet = getattr(torch.ops.aten, op_name, None)
        op = getattr(packet, overload or "default", None) if packet is not None else None
        if isinstance(op, torch._ops.OpOverload):
            ops.append(op)
    return ops


def test_the_schema_rule_for_out_overloads_matches_torchs_out_tag() -> None:
    """torch 2.11 has no `out` tag (nor `torch._library.utils.is_out`); the schema rule
    stands in for it there, and must say what the tag says on every ATen overload."""
    ops = _aten_overloads()
    assert len(ops) > 2000
    disagree = [str(op) for op in ops if out_by_schema(op) != (torch.Tag.out in op.tags)]
    assert not disagree, disagree[:20]
    assert has_out_semantics(torch.ops.aten.add.out) and not has_out_semantics(torch.ops.aten.add_.Tensor)
