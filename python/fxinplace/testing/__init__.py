"""Testing utilities for fxinplace (random program generation for differential tests)."""
