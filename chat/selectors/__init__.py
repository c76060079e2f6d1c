"""Selectors of the chat app, one module per area."""
