"""fxinplace: native re-inplacing (and, next, functionalization) for PyTorch FX graphs."""

from fxinplace._errors import ReinplaceInputError
from fxinplace._functionalize import functionalize
from fxinplace._version import __version__
from fxinplace.reinplace import Decision, ReinplaceReport, reinplace, reinplace_report

__all__ = [
    "Decision",
    "ReinplaceInputError",
    "ReinplaceReport",
    "__version__",
    "functionalize",
    "reinplace",
    "reinplace_report",
]
