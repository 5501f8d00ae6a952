"""Pieces of PyTorch's own tests of the stock re-inplacing pass
(``test/test_fx_reinplace_pass.py``) that the programs of both corpora share."""

from __future__ import annotations

import torch


def scatter_op_views(a_: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ "scatter_op" up to its return: a clone ``a`` of ``a_`` with a view ``e`` of it, and
    an ``add_`` through a view of the first element of another view; returns ``(a, e)``."""
    a = a_.clone()
    e = a.view(-1)
    b = a.view(-1)
    c = b[0]
    d = c.view(-1)
    d.add_(1)
    return a, e


def scatter_into_mirror_of_b(a_: torch.Tensor, mirror_offset: int, index: int) -> torch.Tensor:
    """ "scatter_twice_different_view_op_*": ``c = a[:, 1][1]`` of a clone ``a`` of ``a_``,
    plus one, scattered at ``index`` into ``a.as_strided((4,), (4,), mirror_offset)``
    (offset 1 has the geometry of ``b = a[:, 1]``)."""
    a = a_.clone()
    b = a[:, 1]
    c = b[1]
    c_updated = c.add(1)
    mirror_of_b = a.as_strided((4,), (4,), mirror_offset)
    return torch.select_scatter(mirror_of_b, c_updated, 0, index)
