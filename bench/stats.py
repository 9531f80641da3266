"""Summaries of latency samples."""

from __future__ import annotations


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not ordered:
        return 0.0
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summarise(latencies: list[float], elapsed: float, errors: int) -> dict:
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "errors": errors,
        "seconds": round(elapsed, 3),
        "throughput_rps": round(len(ordered) / elapsed, 2) if elapsed > 0 else 0.0,
        "p50_ms": round(percentile(ordered, 0.50) * 1000, 3),
        "p95_ms": round(percentile(ordered, 0.95) * 1000, 3),
        "p99_ms": round(percentile(ordered, 0.99) * 1000, 3),
    }
