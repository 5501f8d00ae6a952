"""The checker's verdicts are one table (csrc/checker/check_reasons.h), bound as
`fxinplace._C.checker.CheckReason`: stable names (what `ReinplaceCheckError.reason` says)
and texts; the Python frontend's own reasons are in it too."""

from __future__ import annotations

import re
from pathlib import Path

import fxinplace
from fxinplace import _C

ROOT = Path(__file__).resolve().parents[3]

# Tests and users compare these names: they never change (new ones may be added).
STABLE = [
    "ok",
    "wrong_value",
    "wrong_shape",
    "wrong_dtype",
    "operand_count",
    "wrong_argument",
    "metadata_changed",
    "final_input",
    "output_aliases_input",
    "output_aliases_output",
    "output_layout",
    "input_written",
    "constant_written",
    "self_overlap",
    "operand_overlaps_self",
    "foreach_self_overlap",
    "operand_overlaps_other_element",
    "operand_overlaps_written",
    "write_through_dtype_view",
    "fused_read_hazard",
    "raised",
    "cannot_check",
    "functional_raised",
]


def test_the_table_has_every_stable_name_once_with_a_text():
    names = [r.name for r in _C.checker.CheckReason.__members__.values()]
    assert len(names) == len(set(names))
    assert set(STABLE) <= set(names), set(STABLE) - set(names)
    for name in names:
        reason = getattr(_C.checker.CheckReason, name)
        assert reason.name == name and reason.text, name


def test_no_reason_is_a_free_string_in_the_checker():
    """Every reason the checker gives comes from the table: no string literals in C++
    (Found{..., "name"}) nor in the frontend (reason="name")."""
    cpp = (ROOT / "csrc/checker/rewrite_checker.cpp").read_text() + (
        ROOT / "csrc/checker/inductor_contract.cpp"
    ).read_text()
    assert not re.search(r'Found\{[^,]+,\s*"', cpp)
    assert "CheckReason::k" in cpp
    py = "".join(p.read_text() for p in sorted((ROOT / "python/fxinplace/_checker").glob("*.py")))
    assert "ReinplaceCheckError" in py  # the package was read
    assert not re.search(r'reason\s*=\s*"', py)
    assert not re.search(r'finding\(\s*"', py)


def test_errors_carry_the_name_and_the_text():
    error = fxinplace.ReinplaceCheckError("m", reason="output_layout")
    assert error.reason == "output_layout"
    assert error.reason_text == _C.checker.CheckReason.output_layout.text
    assert fxinplace.ReinplaceCheckError("m", reason="").reason_text == ""
