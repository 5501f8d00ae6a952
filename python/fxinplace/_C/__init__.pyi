"""
Native core of fxinplace: operator facts, the re-inplacing planner, its checker, and the functionalization kernels.
"""

from __future__ import annotations
from . import planner
from . import checker
from . import functionalize

__all__: list[str] = ["checker", "functionalize", "planner"]
