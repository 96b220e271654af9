"""Evals: cassettes judged by golden fixtures, into the canonical results document.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

golden (fixtures and their schema) · suite (suite files, cases, the one unique-id rule) · runner (a case ->
its record) · results (the document: built or streamed, validated, read, written) · shard (a run's balanced
share) · merge (shards -> one document) · trial_files and cassette_sets (which files a case reads).
The commands that drive them live in harness/commands/ (eval, merge, bless). Nothing here imports
harness.report: reports are projections of the document, downstream of it.
"""
