"""Services of the chat app, one module per area."""
