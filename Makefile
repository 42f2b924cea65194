# Developer shortcuts. The README has the two commands a new machine needs; these are extras.

.PHONY: bench bench-quick

# Every benchmark (about half an hour): bench/results.json and the table in docs/performance.md.
bench:
	uv run --group bench python -m bench $(BENCH_ARGS)

# A smoke run of every benchmark with small loads (a few minutes), written to out/bench/.
bench-quick:
	uv run --group bench python -m bench --quick $(BENCH_ARGS)
