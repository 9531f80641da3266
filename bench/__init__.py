"""The Fonds benchmark: `python -m bench --scale small` (see README, "Benchmark").

Generates a seeded archive, loads it into a real `fonds serve` process through the fastest
route the server offers, drives it over loopback HTTP with concurrent clients, measures a
bare Starlette+uvicorn endpoint in the same run as the ceiling, and writes
`bench/results/<date>-<db>.json` and `docs/performance.md`."""
