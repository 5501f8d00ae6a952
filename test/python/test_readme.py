"""The README's Python snippets run as written, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_python_block_of_the_readme_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2, "the README's usage snippets are gone"
    namespace: dict = {}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"README.md python block {i}", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"README python block {i} fails: {type(e).__name__}: {e}\n{block}") from e
    out = capsys.readouterr().out
    assert "mul_1: keep: self or an alias of it is used later (see add)" in out
