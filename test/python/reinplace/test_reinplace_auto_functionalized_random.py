"""Random programs of custom mutable ops on views of clones, intermediates and inputs,
mixed with reads and functional ops, re-inplaced and compared with eager.

``FXINPLACE_GEN_COUNT`` seeds (default 60) for each of: graphs from torch's
FunctionalTensorMode (with hand-written auto_functionalized_v2 calls), and graphs
from fxinplace.functionalize (the whole native pipeline).
"""

from __future__ import annotations

import os

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace.testing.harness.afv2 import (
    ADD_ONE,
    AFV2,
    TWO,
    add_one_,
    aten,
    check_eager,
    count,
    list_,
    scale_ret_,
    trace,
    two_,
)

RANDOM_COUNT = int(os.environ.get("FXINPLACE_GEN_COUNT", "60"))

_VIEWS = [
    ("whole", lambda t: t),
    ("tail", lambda t: t[1:]),
    ("head", lambda t: t[:2]),
    ("row", lambda t: t[1]),
    ("col", lambda t: t[:, 1]),
    ("t", lambda t: t.t()),
    ("strided", lambda t: t[:, ::2]),
]


_ENCODINGS = [
    lambda p, i: {f"{p}_base_index": i},
    lambda p, i: {f"{p}_base_index": i, f"{p}_alias": True},
    lambda p, i: {f"{p}_base_index": i, f"{p}_slice_dim": 0, f"{p}_slice_start": 1, f"{p}_slice_end": 3},
    lambda p, i: {f"{p}_base_index": i, f"{p}_size": (2, 2), f"{p}_stride": (4, 2), f"{p}_storage_offset": 1},
]


def _random_program(seed: int):
    """A function of two (3, 4) inputs, with its steps as text for failure messages."""
    import random

    rng = random.Random(seed)
    steps: list[tuple] = []
    roots = [0, 1]  # which memory each variable lives in; v0, v1 are the inputs
    for _ in range(rng.randint(3, 9)):
        kind = rng.choice(
            ["new", "new", "view", "one", "one", "two", "ret", "read", "list", "direct", "direct"]
        )
        a, b = rng.randrange(len(roots)), rng.randrange(len(roots))
        va, vb = rng.randrange(len(_VIEWS)), rng.randrange(len(_VIEWS))
        if kind == "new":
            steps.append(("new", a, rng.choice(["clone", "mul", "add"]), b))
            roots.append(len(roots))
        elif kind == "view":
            steps.append(("view", a, rng.choice(["slice", "view", "tt"])))
            roots.append(roots[a])
        elif kind in ("one", "read"):
            steps.append((kind, a, va, b, vb))
        elif kind in ("two", "list"):
            # Two mutated arguments in one memory would be an invalid call.
            distinct = roots[a] != roots[b]
            steps.append((kind, a, va, b, vb, rng.choice([0.5, 2.0]), distinct))
        elif kind == "direct":
            # auto_functionalized_v2 called by hand: functional, so the old value
            # of its bases may still be read afterwards.
            enc_a, enc_b = rng.randrange(len(_ENCODINGS)), rng.randrange(len(_ENCODINGS))
            steps.append(("direct", a, enc_a, b, enc_b, rng.random() < 0.5))
            roots.append(len(roots))
            roots.append(len(roots))
        else:
            steps.append(("ret", a, va, b))
            roots.append(len(roots))
    num_vars = len(roots)
    returned = rng.sample(range(num_vars), k=min(num_vars, rng.randint(1, 3)))

    def fn(x, y):
        vs = [x, y]
        reads = []
        for step in steps:
            kind = step[0]
            if kind == "new":
                _, a, how, b = step
                src, other = vs[a], vs[b]
                vs.append(src.clone() if how == "clone" else src * 2 if how == "mul" else src + other)
            elif kind == "view":  # a full-size alias of another variable
                _, a, which = step
                t = vs[a]
                vs.append(t[:] if which == "slice" else t.view(3, 4) if which == "view" else t.t().t())
            elif kind == "direct":
                _, a, enc_a, b, enc_b, two = step
                if two:
                    kw = {"alpha": 0.5, **_ENCODINGS[enc_a]("_x", 0), **_ENCODINGS[enc_b]("_y", 1)}
                    out = AFV2(TWO, **kw, _all_bases=[vs[a], vs[b]])
                    vs.extend([out[1], out[2]])
                else:
                    out = AFV2(ADD_ONE, **_ENCODINGS[enc_a]("_x", 0), _all_bases=[vs[a]])
                    vs.extend([out[1], out[1] * 2])
            elif kind == "ret":
                _, a, va, b = step
                target = vs[a] if va % 2 else vs[a][:]
                vs.append(scale_ret_(target, torch.full((3, 4), b + 1.0)))
            else:
                _, a, va, b, vb = step[:5]
                ta, tb = _VIEWS[va][1](vs[a]), _VIEWS[vb][1](vs[b])
                if kind == "one":
                    add_one_(ta)
                elif kind == "read":
                    reads.append(ta.sum() + tb.mean())
                elif kind == "list":
                    list_([ta, tb] if step[6] else [ta])
                elif step[6]:
                    two_(ta, tb, step[5])
        return [vs[i] * 1 for i in returned] + reads

    return fn, f"steps={steps}, returned={returned}"


def make_random_args():
    """Fresh inputs for the random programs."""
    return [torch.arange(12.0).reshape(3, 4), torch.arange(12.0).reshape(3, 4) / 7]


def reinplace_random_program(fn, gm, what: str, *, inputs_mutated: bool) -> None:
    """Checked re-inplacing of gm (traced from fn) on fresh inputs; gm must still run as
    eager fn does. A failure says `what` (the seed, the program) and shows gm's code."""
    try:
        fxinplace.reinplace(gm, *make_random_args(), check=True)
        check_eager(fn, gm, make_random_args(), inputs_mutated=inputs_mutated)
    except Exception as e:
        raise AssertionError(f"{what}\n{gm.code}") from e


@pytest.mark.parametrize("seed", range(RANDOM_COUNT))
def test_random_afv2_program(seed):
    fn, text = _random_program(seed)
    for copy_back in (True, False):
        gm = trace(fn, *make_random_args(), copy_back=copy_back)
        before = count(gm, aten.clone.default)
        what = f"seed {seed} copy_back={copy_back}: {text}"
        reinplace_random_program(fn, gm, what, inputs_mutated=copy_back)
        assert count(gm, aten.clone.default) <= before


def _seeds_without_direct_calls(count: int) -> list[int]:
    """The first `count` seeds whose programs do not call auto_functionalized_v2 by hand
    (only functional graphs may: fxinplace.functionalize sees the custom ops themselves)."""
    seeds: list[int] = []
    seed = 0
    while len(seeds) < count:
        if "'direct'" not in _random_program(seed)[1]:
            seeds.append(seed)
        seed += 1
    return seeds


@pytest.mark.parametrize("seed", _seeds_without_direct_calls(RANDOM_COUNT))
def test_random_program_through_fxinplace_functionalize(seed):
    # The whole native pipeline: fxinplace.functionalize records the custom ops as
    # auto_functionalized_v2 (with input write-backs), fxinplace.reinplace takes
    # the clones back out where it can; the result must still match eager.
    fn, text = _random_program(seed)
    gm = make_fx(fxinplace.functionalize(fn))(*make_random_args())
    before = count(gm, aten.clone.default)
    reinplace_random_program(fn, gm, f"seed {seed}: {text}", inputs_mutated=True)
    assert count(gm, aten.clone.default) <= before
