"""Burster: hybrid-cloud GPU burst autoscaler and cost controller."""

__version__ = "0.1.0"
