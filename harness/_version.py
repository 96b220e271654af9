"""The version of loop-harness, at the bottom of the layers: reports, exports and the CLI stamp it, and none of
them may import the public surface (harness/__init__.py) to read it."""

__version__ = "0.1.0"
