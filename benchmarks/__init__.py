"""Benchmarks: each module prints its figures, the targets and the machine."""
