"""Benchmarks; run ``python bench/queue.py`` (see docs/bench/)."""
