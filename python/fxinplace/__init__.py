"""fxinplace: native re-inplacing (and, next, functionalization) for PyTorch FX graphs."""

from fxinplace._errors import ReinplaceInputError
from fxinplace.reinplace import Decision, ReinplaceReport, reinplace, reinplace_report

__all__ = ["Decision", "ReinplaceInputError", "ReinplaceReport", "reinplace", "reinplace_report"]
