"""One random view step on an expression: the view ops programs chain together.

``view_step`` proposes a view of ``expr`` from the tensor's metadata at every size
(constants are chosen to fit the smallest size). The proposal may still be invalid
(a ``view`` that needs other strides, an ``as_strided`` past the storage): the builder
evaluates it at every size and drops it if it fails anywhere.

Kinds (for coverage): select, slice, transpose, permute, diagonal, view, reshape,
squeeze, unsqueeze, as_strided, expand, unfold, conj, neg, dtype, real_imag, split,
alias.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from fxinplace.testing.random.inputs import DTYPE_VIEWS, dtype_name

__all__ = ["VIEW_KINDS", "inplace_view_step", "view_step"]

VIEW_KINDS: tuple[tuple[str, float], ...] = (
    ("select", 3.0),
    ("slice", 4.0),
    ("transpose", 2.0),
    ("permute", 1.0),
    ("diagonal", 1.0),
    ("view", 2.0),
    ("reshape", 1.0),
    ("squeeze", 1.0),
    ("unsqueeze", 1.5),
    ("as_strided", 1.0),
    ("expand", 1.0),
    ("unfold", 1.0),
    ("conj", 2.0),
    ("neg", 1.0),
    ("dtype", 1.5),
    ("real_imag", 2.0),
    ("split", 1.0),
    ("alias", 0.3),
)


def _slice_text(rng: random.Random, m: int) -> str:
    """A slice of a dim whose smallest size is ``m``."""
    forms = ["1:", ":-1", "::2", "-2:", ":1", "1::2"]
    if m >= 3:
        forms += ["1:3", "0:2", ":2"]
    if m >= 4:
        forms += ["1:-1", "-3:-1"]
    return rng.choice(forms)


def _int_index(rng: random.Random, m: int) -> int | None:
    if m <= 0:
        return None
    i = rng.randrange(min(m, 3))
    return -1 - i if rng.random() < 0.35 else i


def view_step(rng: random.Random, expr: str, ts: Sequence[torch.Tensor]) -> tuple[str, str] | None:
    """``(kind, source)`` of a random view of ``expr``, whose values at each size are ``ts``."""
    t = ts[0]
    nd = t.dim()
    mins = [min(x.shape[d] for x in ts) for d in range(nd)]
    family_complex = t.dtype.is_complex
    kinds = []
    for kind, weight in VIEW_KINDS:
        if kind in ("select", "slice", "unfold", "split") and nd == 0:
            continue
        if kind in ("transpose", "permute", "diagonal") and nd < 2:
            continue
        if kind == "conj" and not family_complex:
            continue
        pairs = nd >= 1 and t.shape[-1] == 2 and t.dtype in (torch.float32, torch.float64)
        if kind == "real_imag" and not (family_complex or pairs):
            continue
        if kind == "neg" and t.dtype == torch.bool:
            continue
        # A dtype view of a tensor with the neg or conj bit cannot even be read in eager.
        if kind == "dtype" and (t.dtype not in DTYPE_VIEWS or t.is_neg() or t.is_conj()):
            continue
        # Complex programs are the only ones with conj views and real/imag: use them more there.
        kinds.append((kind, weight * 2.5 if family_complex and kind in ("conj", "real_imag") else weight))
    kind = rng.choices(*zip(*kinds, strict=True))[0]
    d = rng.randrange(nd) if nd else 0

    if kind == "select":
        i = _int_index(rng, mins[d])
        if i is None:
            return None
        if d == 0 and rng.random() < 0.6:
            return kind, f"{expr}[{i}]"
        if rng.random() < 0.5:
            return kind, f"{expr}[{':, ' * d}{i}]"
        return kind, f"{expr}.select({d}, {i})"
    if kind == "slice":
        if rng.random() < 0.25 and mins[d] >= 1:
            start = rng.randrange(min(mins[d], 2))
            length = rng.randrange(0, mins[d] - start + 1)
            return kind, f"{expr}.narrow({d}, {start}, {length})"
        text = _slice_text(rng, mins[d])
        if d == nd - 1 and d and rng.random() < 0.3:
            return kind, f"{expr}[..., {text}]"
        return kind, f"{expr}[{':, ' * d}{text}]"
    if kind == "transpose":
        if nd == 2 and rng.random() < 0.4:
            return kind, f"{expr}.t()"
        i, j = rng.sample(range(-nd, nd), 2)
        if i % nd == j % nd:
            return None
        return kind, f"{expr}.transpose({i}, {j})"
    if kind == "permute":
        if rng.random() < 0.3:
            return kind, f"{expr}.movedim({rng.randrange(nd)}, {rng.randrange(nd)})"
        perm = list(range(nd))
        rng.shuffle(perm)
        return kind, f"{expr}.permute({', '.join(map(str, perm))})"
    if kind == "diagonal":
        offset = rng.choice((0, 0, 1, -1))
        i, j = rng.sample(range(nd), 2)
        if (i, j) == (0, 1) and rng.random() < 0.5:
            return kind, f"{expr}.diagonal({offset})" if offset else f"{expr}.diagonal()"
        return kind, f"{expr}.diagonal({offset}, {i}, {j})"
    if kind in ("view", "reshape"):
        forms = ["-1", "2, -1", "-1, 2", "1, -1", "-1, 1"]
        if nd >= 2:
            forms += [f"{expr}.shape[0], -1", f"-1, {expr}.shape[-1]"]
        if nd >= 1:
            forms += [f"*{expr}.shape, 1", f"1, *{expr}.shape"]
        if kind == "view" and rng.random() < 0.3:
            if nd >= 2 and rng.random() < 0.5:
                return kind, f"{expr}.flatten({rng.choice(('', '0, 1', '-2'))})"
            if nd >= 1:
                return kind, f"{expr}.unflatten({d}, (-1, 1))"
        return kind, f"{expr}.{kind}({rng.choice(forms)})"
    if kind == "squeeze":
        ones = [i for i in range(nd) if t.shape[i] == 1]
        if ones and rng.random() < 0.7:
            return kind, f"{expr}.squeeze({rng.choice(ones)})"
        return kind, f"{expr}.squeeze()"
    if kind == "unsqueeze":
        at = rng.randrange(-nd - 1, nd + 1)
        if rng.random() < 0.25:
            return kind, f"{expr}[None]"
        return kind, f"{expr}.unsqueeze({at})"
    if kind == "as_strided":
        size, stride = rng.choice(
            (
                ("(2, 2)", "(1, 2)"),
                ("(2, 2)", "(2, 1)"),
                ("(3,)", "(2,)"),
                ("(2, 3)", "(3, 1)"),
                ("(2,)", "(1,)"),
            )
        )
        offset = rng.choice(("", " + 1"))
        return kind, f"{expr}.as_strided({size}, {stride}, {expr}.storage_offset(){offset})"
    if kind == "expand":
        ones = [i for i in range(nd) if t.shape[i] == 1]
        if ones and rng.random() < 0.5:
            sizes = ["-1"] * nd
            sizes[rng.choice(ones)] = str(rng.choice((2, 3)))
            return kind, f"{expr}.expand({', '.join(sizes)})"
        return kind, f"{expr}.expand({rng.choice((2, 3))}, *{expr}.shape)"
    if kind == "unfold":
        size = rng.choice((1, 2, 2))
        step = rng.choice((1, 2, 2, 3))
        if mins[d] < size:
            return None
        return kind, f"{expr}.unfold({d}, {size}, {step})"
    if kind == "conj":
        return kind, rng.choice((f"{expr}.conj()", f"torch.conj({expr})"))
    if kind == "neg":
        return kind, f"torch._neg_view({expr})"
    if kind == "dtype":
        target = rng.choice(DTYPE_VIEWS[t.dtype])
        return kind, f"{expr}.view(torch.{dtype_name(target)})"
    if kind == "real_imag":
        if family_complex:
            return kind, rng.choice((f"{expr}.real", f"{expr}.imag", f"torch.view_as_real({expr})"))
        return kind, f"torch.view_as_complex({expr})"
    if kind == "split":
        form = rng.randrange(3)
        if form == 0:
            return kind, f"{expr}.split(2, {d})[{rng.choice((0, -1))}]"
        if form == 1:
            i = _int_index(rng, mins[d])
            return (kind, f"{expr}.unbind({d})[{i}]") if i is not None else None
        return kind, f"{expr}.chunk(2, {d})[{rng.choice((0, -1))}]"
    if kind == "alias":
        return kind, rng.choice((f"{expr}[...]", f"{expr}.view_as({expr})", f"{expr}.detach()"))
    raise AssertionError(kind)


def inplace_view_step(
    rng: random.Random, expr: str, ts: Sequence[torch.Tensor], *, may_add_dim: bool = True
) -> tuple[str, str]:
    """``(kind, source)`` of a random in-place view op on ``expr`` (a statement): ``t_``,
    ``transpose_``, ``swapdims_``, ``squeeze_``, ``unsqueeze_``, ``as_strided_``. They change
    the tensor's own sizes and strides (an input's too, as the caller sees it), which a
    functionalization must replay, and write back to inputs."""
    t = ts[0]
    nd = t.dim()
    forms: list[tuple[str, str]] = []
    if nd == 2:
        forms.append(("t_", f"{expr}.t_()"))
    if nd >= 2:
        i, j = rng.sample(range(-nd, nd), 2)
        if i % nd != j % nd:
            op = rng.choice(("transpose_", "swapdims_"))
            forms.append((op, f"{expr}.{op}({i}, {j})"))
    ones = [d for d in range(nd) if all(x.shape[d] == 1 for x in ts)]
    if ones:
        forms.append(("squeeze_", f"{expr}.squeeze_({rng.choice(ones)})"))
    elif nd:
        forms.append(("squeeze_", f"{expr}.squeeze_()"))
    if may_add_dim:
        forms.append(("unsqueeze_", f"{expr}.unsqueeze_({rng.randrange(-nd - 1, nd + 1)})"))
    shapes = (("(2, 2)", "(1, 2)"), ("(3,)", "(2,)"), ("(2, 3)", "(3, 1)"), ("(2,)", "(1,)"))
    size, stride = rng.choice(shapes)
    forms.append(("as_strided_", f"{expr}.as_strided_({size}, {stride}, {expr}.storage_offset())"))
    return rng.choice(forms)
