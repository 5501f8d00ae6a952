"""`fxinplace.testing.planner_input`: what the planner sees for a graph, as the text a C++ replay
test reads (test/cpp/cases/*.ir), read through the pass's own front half."""

from __future__ import annotations

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace.testing.planner_input import planner_input


def test_the_text_has_a_node_a_line_and_the_passs_own_decisions() -> None:
    def f(x):
        y = x.add(1)
        return y.mul(2)

    x = torch.randn(4)
    text = planner_input(make_fx(f)(x), x, comment="two ops")
    lines = text.splitlines()
    assert lines[0] == "# two ops"
    assert [line.split()[2] for line in lines if line.startswith("node ")] == ["input", "op", "op", "output"]
    expected = {line.split()[1]: line.split()[2] for line in lines if line.startswith("expect ")}
    report = fxinplace.reinplace_report(make_fx(f)(x), x)
    decided = {d.node: d.action for d in report.decisions}
    assert expected == {"1": decided["add"], "2": decided["mul"]} == {"1": "keep", "2": "inplace"}
