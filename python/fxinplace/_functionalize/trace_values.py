"""One fake mode for the values ``make_fx`` records while it traces a functionalized function.

In real tracing mode ``make_fx`` stores each recorded node's value as a fake tensor, and, with no
fake mode to find, builds a new ``FakeTensorMode`` for every one of them (its own comment calls
this a stopgap for one mode per trace). Each new mode captures the whole Python stack: on a
4-layer GPT-2 that is over half the trace. ``make_fx`` looks for the mode in the ambient
``TracingContext`` first, so for the duration of the functionalized call we provide one, holding
a single mode. The graph and its values' metadata are the same; only the mode object the fake
values point to is shared.

Where a fake mode already exists (fake or symbolic tracing, or a compiler's own context) or no
``make_fx`` is tracing, nothing is changed.
"""

from __future__ import annotations

import contextlib
from typing import Any

from torch import Tensor
from torch._guards import TracingContext, detect_fake_mode, tracing
from torch._subclasses.fake_tensor import FakeTensorMode, disable_fake_tensor_cache
from torch.fx.experimental.proxy_tensor import get_proxy_mode
from torch.fx.experimental.symbolic_shapes import statically_known_true


def one_fake_mode_per_trace(flat_args: list[Any]) -> contextlib.AbstractContextManager:
    if get_proxy_mode() is None or detect_fake_mode(flat_args) is not None:
        return contextlib.nullcontext()
    return tracing(TracingContext(FakeTensorMode(allow_fallback_kernels=True)))


def exact_storage_offsets(flat_args: list[Any]) -> contextlib.AbstractContextManager:
    """Fake dispatch without torch's cache while an input does not start its storage.

    A cache hit rebuilds a result that is no view at storage offset 0, where the op keeps its
    input's (slice_scatter, select_scatter, as_strided_scatter of x[1:-1]: offset 1). Functional
    values then answer another storage offset than they have when the graph runs, and an
    as_strided of one, which addresses its storage, reads other elements (random pipelines
    seed 126434; test_torch_compat.py watches the torch bug). Only an input with a storage
    offset brings such values into a trace, so other traces keep the cache's speed.
    """
    mode = detect_fake_mode(flat_args)
    offsets = [a.storage_offset() for a in flat_args if isinstance(a, Tensor)]
    if mode is None or all(statically_known_true(o == 0) for o in offsets):
        return contextlib.nullcontext()
    return disable_fake_tensor_cache(mode)
