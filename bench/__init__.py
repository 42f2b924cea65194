"""A2A Arena benchmarks: ``make bench`` (or ``uv run --group bench python -m bench``).

Never run by the test suite. See bench/README.md and docs/performance.md.
"""
