"""Moving a random program's inputs to another device keeps their aliasing (the GPU runs of
`benchmarks/run_random_compile.py --device cuda` rely on it). Checked here by a move to the CPU
itself (a copy): every storage copied once, every input the same view of its copy."""

from __future__ import annotations

import itertools

import pytest
import torch

from fxinplace.testing.harness.on_device import (
    ProgramOnDevice,
    default_device,
    on_device,
    to_device_keeping_aliases,
)
from fxinplace.testing.harness.oracle import differences, observe
from fxinplace.testing.random.programs import generate


def _aliased_inputs() -> list[torch.Tensor]:
    base = torch.arange(24.0).reshape(4, 6)
    z = torch.complex(torch.randn(3), torch.randn(3))
    return [
        base,
        base[..., 1:],  # a gapped slice
        base.t(),
        base.view(torch.int32)[1],  # a dtype view
        base,  # the same tensor twice
        torch.cat([base, base], 0)[::2],  # gaps, its own storage
        z.conj(),
        torch.empty(0),
    ]


def _shares(xs: list[torch.Tensor]) -> set[tuple[int, int]]:
    return {
        (i, j)
        for (i, a), (j, b) in itertools.combinations(enumerate(xs), 2)
        if a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and a.numel() and b.numel()
    }


def test_the_moved_inputs_alias_each_other_as_the_originals_do() -> None:
    xs = _aliased_inputs()
    moved = to_device_keeping_aliases(xs, "cpu")
    assert _shares(moved) == _shares(xs)
    for x, m in zip(xs, moved, strict=True):
        assert m.dtype == x.dtype and m.shape == x.shape and m.stride() == x.stride()
        assert m.storage_offset() == x.storage_offset() and m.is_conj() == x.is_conj()
        assert torch.equal(m.resolve_conj(), x.resolve_conj())
        if x.numel():
            assert m.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()  # a copy
        # AOTAutograd reads _base to tell aliased inputs apart
        assert (m._base is None) == (x._base is None)
        if x._base is not None and any(x._base is y for y in xs):
            assert any(m._base is y for y in moved)
    assert moved[0] is moved[4]
    moved[0].add_(1)  # a write through one input is seen through its aliases
    assert torch.equal(moved[1], moved[0][..., 1:]) and torch.equal(moved[2], moved[0].t())


@pytest.mark.parametrize("seed", [3, 11, 163])
def test_a_program_on_a_device_runs_as_on_the_cpu(seed: int) -> None:
    program = generate(seed, reject_lines=False)
    moved = ProgramOnDevice(program, "cpu")
    assert on_device(program, "cpu") is program and on_device(program, None) is program
    with default_device("cpu"):
        for n in program.sizes:
            assert not differences(
                observe(moved.fn, moved.make_args(n)), observe(program.fn, program.make_args(n))
            )


def test_inputs_are_made_on_the_cpu_and_moved_whatever_the_default_device() -> None:
    program = generate(3, reject_lines=False)
    with default_device("meta"):  # as the GPU runs set it: the program's own tensors go there
        args = ProgramOnDevice(program, "meta").make_args(program.sizes[0])
        assert torch.ones(1).device.type == "meta"
    assert all(a.device.type == "meta" for a in args if isinstance(a, torch.Tensor))
