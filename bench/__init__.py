"""Benchmarks; run ``python bench/queue.py`` (see bench/README.md)."""
