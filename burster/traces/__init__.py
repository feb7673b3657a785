"""Job trace loaders: each turns a public or user trace into a list of Demand, oldest first.

Every loader validates every row before returning anything; a bad row raises InputError naming
the file, the row and the column, so nothing half-loaded is ever simulated.
"""

from burster.traces.base import TRACE_EPOCH, Trace
from burster.traces.registry import TRACE_FORMATS, load_trace

__all__ = ["TRACE_EPOCH", "TRACE_FORMATS", "Trace", "load_trace"]
