"""The pass's front half: a validated graph and its sample args read into the planner's picture.

Find each node's values (`metadata`, with the stand-ins that run auto_functionalized and
opaque higher-order nodes), then read the graph into a `_C.planner.GraphBuilder` (`records`).
`fxinplace.reinplace` plans and applies what this reads; `fxinplace.testing.planner_input`
saves it for a C++ test. Callers validate the graph first (`validate.validate`)."""

from __future__ import annotations

from torch.fx import GraphModule

from fxinplace._reinplace.auto_functionalized.v1 import metadata_runners as afv1_runners
from fxinplace._reinplace.auto_functionalized.v2 import metadata_runners as afv2_runners
from fxinplace._reinplace.higher_order import metadata_runners as higher_order_runners
from fxinplace._reinplace.inductor_policy import inductor_facts
from fxinplace._reinplace.metadata import propagate, traced_symbolically
from fxinplace._reinplace.records import GraphReading, read_graph


def read(
    gm: GraphModule,
    sample_args: tuple,
    *,
    metadata: str = "auto",
    with_destinations: bool = False,
    for_inductor: bool = False,
    with_memory_facts: bool = False,
) -> tuple[GraphReading, str]:
    """The planner's picture of `gm`, and which way its values were found (`metadata.propagate`'s
    path). with_destinations: list the other operands an elementwise op's result may go into;
    for_inductor: describe what Inductor does with each node (`inductor_policy.inductor_facts`);
    with_memory_facts: each node's device, bytes and backend out= kernel (`memory.MemoryFacts`)."""
    runners = {
        **afv2_runners(gm, sample_args),
        **afv1_runners(gm, sample_args),
        **higher_order_runners(gm),
    }
    found = propagate(gm, sample_args, metadata=metadata, runners=runners)
    # A dynamic-shape graph whose values could only be found at the sample args' sizes gets
    # no memory plan: the plan pairs buffers of equal sizes, which the sample sizes may make
    # equal only at these inputs (random pipelines seed 113263: 7 floats and s0 of them).
    at_sample_sizes = found.path != "symbolic" and traced_symbolically(gm)
    reading = read_graph(
        gm,
        found,
        with_destinations=with_destinations,
        compiler_facts=inductor_facts if for_inductor else None,
        with_memory_facts=with_memory_facts and not at_sample_sizes,
    )
    return reading, found.path
