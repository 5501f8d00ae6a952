"""fxinplace.inductor on the compile programs (GPT-2, Llama, BERT, T5 training and inference
steps, BatchNorm in train mode, an AdamW foreach step, a KV-cache decode step, a cache
update), small configs: each is compiled once with the hook, Inductor's own pass shadowing
ours on a copy of every graph at the slot.

- results equal eager (outputs, gradients, buffers, optimizer state);
- on every graph, our rewrites are at least Inductor's (`in_place_writes`);
- where both passes leave the same graph, the rest of the compile is stock Inductor's by
  construction; where they differ, the program is compiled with stock Inductor too and the
  generated kernel count must not be higher (and the results agree).
"""

from __future__ import annotations

import pytest
import torch

from fxinplace.testing.harness.compile_programs import PROGRAMS
from fxinplace.testing.harness.inductor_parity import eager_steps, run_program

# Inductor reorders float math (fused reductions, matmul epilogues): training steps through
# several layers and an optimizer drift a little more than a single kernel does.
RTOL, ATOL = 1e-3, 1e-4


def _close(want, got, what: str) -> None:
    assert len(want) == len(got), what
    for step, (w, g) in enumerate(zip(want, got, strict=True)):
        assert w.keys() == g.keys(), what
        for k in w:
            assert w[k].dtype == g[k].dtype and w[k].shape == g[k].shape, f"{what}: step {step} {k}"
            assert torch.allclose(w[k], g[k], rtol=RTOL, atol=ATOL, equal_nan=True), (
                f"{what}: step {step} {k}"
            )


@pytest.fixture(autouse=True)
def _eager_random_numbers():
    """Training steps run dropout: with fallback_random, Inductor draws from ATen's
    generator as eager does (its own RNG gives other, equally valid, numbers)."""
    from torch._inductor import config

    with config.patch(fallback_random=True):
        yield


def _parity(name: str, dynamic: bool | None = None, steps: int = 2) -> None:
    want = eager_steps(name, steps)
    ours = run_program(name, hook=True, dynamic=dynamic, steps=steps, shadow_stock=True)
    _close(want, ours.steps, f"{name} with the hook vs eager")
    assert ours.slots, f"{name}: no graph reached Inductor's re-inplacing slot"
    for k, r in enumerate(ours.slots):
        assert r.writes >= r.stock_writes, (
            f"{name} graph {k}: {r.writes} rewrites < Inductor's {r.stock_writes}"
        )
    if not all(r.same_as_stock for r in ours.slots):
        stock = run_program(name, hook=False, dynamic=dynamic, steps=steps)
        assert ours.kernels <= stock.kernels, (
            f"{name}: {ours.kernels} kernels > stock Inductor's {stock.kernels}"
        )
        _close(stock.steps, ours.steps, f"{name} with the hook vs stock Inductor")


@pytest.mark.parametrize("name", [p.name for p in PROGRAMS])
def test_program_with_the_hook(name: str) -> None:
    _parity(name)


@pytest.mark.parametrize("name", ["gpt2_infer", "kv_cache_decode", "kv_views_decode", "adamw_foreach"])
def test_program_with_the_hook_dynamic(name: str) -> None:
    _parity(name, dynamic=True, steps=3)
