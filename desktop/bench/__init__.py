"""`parley bench`: measures the latencies, real-time factors and resource counts of SPEC §9 and prints one table.

A benchmark, not a test: a missed target is reported ("met: no"), never an error.
"""
