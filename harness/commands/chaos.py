"""`harness chaos`: its arguments and run live beside the code they drive, in harness/chaos.py."""

from harness.chaos import add_arguments, run

__all__ = ["add_arguments", "run"]
