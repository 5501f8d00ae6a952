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


def _table(out: str) -> dict[str, list[str]]:
    """The bench table's rows by their first cell."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 3:
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
