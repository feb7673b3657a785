"""The simulator: replays a trace through the live reconcile path with a fake clock."""
