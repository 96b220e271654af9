"""Evals: golden fixtures and suites, the runner, the canonical results document (commands: harness/commands/)."""
