"""`python -m fxinplace`: on a saved torch.export program, a user function, built-in
graphs, and arguments that do not fit (argparse errors, not tracebacks)."""

from __future__ import annotations

import pytest
import torch

from fxinplace import cli


class _WithBuffer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros(4))

    def forward(self, x):
        self.count.add_(1)
        y = self.lin(x).relu()
        y[0] = 0
        return y * 2


def _table(out: str, columns: int = 3) -> dict[str, list[str]]:
    """The rows of a printed table of `columns` columns (the bench table's: 3), by their first cell."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == columns:
            rows[cells[0]] = cells[1:]
    return rows


def _user_function(x, idx):
    y = x.clone()
    y[idx] = 0
    return (y * 2).relu()


def test_bench_on_a_saved_exported_program(tmp_path, capsys):
    path = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(_WithBuffer(), (torch.randn(3, 4),)), path)
    assert cli.main(["bench", "--program", str(path), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    rows = _table(out)
    assert rows["same code as the stock pass"] == ["", "yes"]
    assert rows["results match the graph and eager"] == ["yes", "yes"]
    assert rows["scatters removed"] == ["1", "1"]
    assert f"torch {torch.__version__}" in out


def test_explain_on_a_user_function(capsys):
    assert cli.main(["explain", "--function", f"{__name__}:_user_function", "--inputs", "4x4,2:int64"]) == 0
    out = capsys.readouterr().out
    assert "index_put: inplace: done" in out and "relu: inplace: done" in out


def test_bench_on_a_synthetic_graph_reports_the_drop_in_claim(capsys):
    assert cli.main(["bench", "--model", "view", "--nodes", "200", "--repeat", "1"]) == 0
    rows = _table(capsys.readouterr().out)
    assert rows["same code as the stock pass"] == ["", "yes"]
    assert rows["results match the graph"] == ["yes", "yes"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "--nodes", "0"], "0 is not a positive integer"),
        (["bench", "--nodes", "-5"], "-5 is not a positive integer"),
        (["bench", "--model", "chain", "--train"], "--train is for the gpt2 and llama graphs"),
        (["bench", "--train", "--functionalize", "fxinplace"], "records the gpt2/llama inference graphs"),
        (["explain", "--program", "a.pt2", "--function", "m:f"], "not both"),
        (["explain", "--inputs", "4"], "--inputs goes with --function"),
        (["explain", "--function", "no_such_module_xyz:f"], "cannot import no_such_module_xyz"),
        (["explain", "--function", f"{__name__}:_user_function", "--inputs", "4x"], "sizes like 4x4"),
    ],
)
def test_arguments_that_do_not_fit_are_argparse_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def _matmul_chain(a, b):
    y1 = torch.mm(a, b)
    y2 = torch.mm(y1, b)
    return torch.mm(y2, b)  # y1 is dead: the memory plan writes this into y1's buffer


def test_memory_measures_bytes_held_at_each_node(capsys):
    from fxinplace.testing.harness.live_bytes import live_bytes

    args = (torch.randn(4, 4), torch.randn(4, 4))
    gm = torch.fx.experimental.proxy_tensor.make_fx(_matmul_chain)(*args)
    t = live_bytes(gm, args)
    # 64 bytes per result: y1; y1 and y2; y2 and the result (y1 dropped after its last use).
    assert (t.live, t.allocated_bytes, t.allocations) == ([64, 128, 128], 192, 3)

    def written_in_place(a, b):
        y = torch.mm(a, b)
        y.relu_()  # its result is unused: dropped at once, it holds y no longer than y is used
        s = y.sum()
        return torch.mm(a, b), s

    t = live_bytes(torch.fx.experimental.proxy_tensor.make_fx(written_in_place)(*args), args)
    assert t.live == [64, 64, 68, 68]

    assert cli.main(["memory", "--function", f"{__name__}:_matmul_chain", "--inputs", "4x4,4x4"]) == 0
    out = capsys.readouterr().out
    rows = _table(out, columns=5)
    assert rows["functional"][2:] == ["3", "yes"]
    assert rows["fxinplace+plan"][2:] == ["2", "yes"]  # the last mm reuses y1's buffer
    assert "fxinplace+plan |" in out


def test_memory_plot_without_matplotlib_is_an_argparse_error(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    with pytest.raises(SystemExit) as e:
        cli.main(
            ["memory", "--function", f"{__name__}:_matmul_chain", "--inputs", "4x4,4x4", "--plot", "x.png"]
        )
    assert e.value.code == 2
    assert "--plot needs matplotlib: pip install 'fxinplace[plot]'" in capsys.readouterr().err


def test_memory_plot_draws_the_timelines(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "live.png"
    argv = ["memory", "--function", f"{__name__}:_matmul_chain", "--inputs", "4x4,4x4", "--plot", str(path)]
    assert cli.main(argv) == 0
    assert path.stat().st_size > 0
