"""Benchmark tasks: the registry, readers of canonical distribution formats, normalised data and metrics."""
