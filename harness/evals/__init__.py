"""Evals: golden fixtures and suites, the runner, the canonical results document, `harness eval` and `bless`."""
