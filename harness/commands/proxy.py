"""`harness proxy`: its arguments and run live beside the code they drive, in harness/proxy.py."""

from harness.proxy import add_arguments, run

__all__ = ["add_arguments", "run"]
