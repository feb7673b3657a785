"""Simulated adapters: a cloud per provider built from the price catalog, spot availability replayed
from traces, a launch-latency model, and an on-prem pool (FIFO with backfill) fed by a job trace."""
