"""`harness serve`: its arguments and run live beside the code they drive, in harness/serve.py."""

from harness.serve import add_arguments, run

__all__ = ["add_arguments", "run"]
