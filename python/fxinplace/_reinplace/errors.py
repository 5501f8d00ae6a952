"""The one exception type fxinplace raises for graphs or arguments it cannot take."""


class ReinplaceInputError(ValueError):
    """The graph or the sample args are outside what the pass supports; the message names the node."""
