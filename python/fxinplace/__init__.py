"""fxinplace: native re-inplacing (and, next, functionalization) for PyTorch FX graphs."""

from fxinplace._check import ReinplaceCheckError, check_reinplaced
from fxinplace._errors import ReinplaceInputError
from fxinplace._functionalize import functionalize
from fxinplace.reinplace import Decision, ReinplaceReport, reinplace, reinplace_report

__all__ = [
    "Decision",
    "ReinplaceCheckError",
    "ReinplaceInputError",
    "ReinplaceReport",
    "check_reinplaced",
    "functionalize",
    "reinplace",
    "reinplace_report",
]
