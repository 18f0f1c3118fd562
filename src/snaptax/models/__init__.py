"""Explanatory models: pure functions (formula and units in each docstring) and their fits."""
