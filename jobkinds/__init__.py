"""Job kinds: one module per kind, built on jobcore's public API only."""
