"""Policies: pure functions of a Snapshot that return a Plan. Standard library + contracts only."""
