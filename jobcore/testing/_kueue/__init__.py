"""A Kueue stand-in for tests, over Kueue's API types served by the test API server.

Kueue's API types as CRDs (`crds`, `schemas`), `api` Kueue's names.
"""
