"""fxinplace's test and benchmark library.

``harness``: the differential harnesses and their oracle; ``random``: the random program
generator; ``models``: the tiny transformers models; ``graphs``, ``sources`` and ``tables``:
graphs and tables for the benchmarks and the CLI; ``planner_input``: what the planner sees for a
graph, saved for a C++ test."""

__all__ = ["graphs", "harness", "models", "planner_input", "random", "sources", "tables"]
