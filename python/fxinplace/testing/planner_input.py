"""Save what the planner sees for a graph, to replay it in C++ (test/cpp/cases/*.ir).

    text = planner_input(gm, *sample_args)   # before re-inplacing gm
    Path("test/cpp/cases/my_case.ir").write_text(text)

The text ends with one `expect` line per candidate: today's decision. For a case
that shows a bug, edit those lines to the right decision; the C++ replay test
(test/cpp/replay_test.cpp) then fails until the planner makes it.
"""

from __future__ import annotations

from typing import Any

from torch.fx import GraphModule

from fxinplace._reinplace.frontend import read
from fxinplace._reinplace.validate import validate


def planner_input(gm: GraphModule, *sample_args: Any, comment: str = "") -> str:
    validate(gm, sample_args)
    reading, _ = read(gm, sample_args)
    header = "".join(f"# {line}\n" for line in comment.splitlines())
    return header + reading.builder.dump()
