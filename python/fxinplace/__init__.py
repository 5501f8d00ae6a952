"""fxinplace: native re-inplacing and functionalization for PyTorch FX graphs."""

from fxinplace._checker import FunctionalGraphRaisedError, ReinplaceCheckError, check_reinplaced
from fxinplace._functionalize import functionalize
from fxinplace._reinplace import reinplace, reinplace_report
from fxinplace._reinplace.errors import ReinplaceInputError
from fxinplace._reinplace.report import Decision, ReinplaceReport
from fxinplace._version import __version__

__all__ = [
    "Decision",
    "FunctionalGraphRaisedError",
    "ReinplaceCheckError",
    "ReinplaceInputError",
    "ReinplaceReport",
    "__version__",
    "check_reinplaced",
    "functionalize",
    "reinplace",
    "reinplace_report",
]
