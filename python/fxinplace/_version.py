"""The package version: read by pyproject.toml (setuptools attr) and fxinplace.__version__."""

__version__ = "0.2.0"
