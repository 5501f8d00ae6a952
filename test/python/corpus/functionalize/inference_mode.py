"""Inference mode: the inputs are created and every call runs inside ``torch.inference_mode()``."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a6, a34, a44, r44_r44


@functionalize_case(a44, "inference_mode", inference_mode=True)
def inference_view_mutation(x):
    a = x.clone()
    a.view(-1)[::3].add_(1)
    return a


@functionalize_case(r44_r44, "inference_mode", "input_mutation", inference_mode=True)
def inference_input_mutation(x, y):
    x[1:].mul_(2)
    y.t()[0].copy_(x[0])
    return x + y


@functionalize_case(a34, "inference_mode", "factory", inference_mode=True)
def inference_factory_and_views(x):
    z = torch.zeros(4, 3)
    z.t()[1].fill_(1.0)
    return x @ z, z


@functionalize_case(a6, "inference_mode", "output_aliases_input", inference_mode=True)
def inference_returns_input_view(x):
    x[2:].zero_()
    return x[1:4], x.view(2, 3)
