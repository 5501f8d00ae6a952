"""Custom mutable ops, as torch's higher-order ops record them: `auto_functionalized` (v1,
`v1.py`) and `auto_functionalized_v2` (`v2.py`). Each module reads its node once, stands in
for it while `metadata.propagate` runs (the custom op must not run), and carries out the
planner's decision on it; what the two share is in `shared` and `fx_edit`."""
