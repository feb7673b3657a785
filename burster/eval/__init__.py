"""Offline evaluation: bracket a trace's optimal cloud cost between an LP lower bound and a clairvoyant schedule."""
