"""The checker's own operator tables (fxinplace/_checker/ops.py) agree with the pass's
operator facts, which the checker does not import: compared here, on every ATen overload."""

from __future__ import annotations

import torch

from fxinplace._checker import ops
from fxinplace._reinplace.op_info import op_info


def _aten_overloads() -> list[torch._ops.OpOverload]:
    found = []
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        packet = getattr(torch.ops.aten, schema.name[len("aten::") :], None)
        op = getattr(packet, schema.overload_name or "default", None) if packet is not None else None
        if isinstance(op, torch._ops.OpOverload):
            found.append(op)
    return found


def test_commutative_ops_are_the_pass_s():
    overloads = _aten_overloads()
    assert len(overloads) > 1000
    checker = {op for op in overloads if (op._schema.name, op._schema.overload_name) in ops._COMMUTATIVE}
    planner = {op for op in overloads if op_info(op).commutative}
    assert checker == planner, (sorted(map(str, checker - planner)), sorted(map(str, planner - checker)))
    assert torch.ops.aten.add.Tensor in checker and torch.ops.aten.sub.Tensor not in checker


def test_inductor_inplace_forms_are_the_pass_s():
    from fxinplace._reinplace.inductor_policy import inductor_inplace_form

    for functional, inplace in ops._inductor_inplace_forms().items():
        assert inductor_inplace_form(functional) is inplace
        assert ops._inplace_of(functional, inplace)
