"""Selectors of the metrics app, one module per area."""
