"""The `harness` commands, one module each: `harness NAME` is harness/commands/NAME.py (import_.py for
`import`, a Python keyword). Each exposes `add_arguments(parser)` and `run(args) -> int`; harness/cli.py
routes to them. A command reads its arguments and calls the library; chaos, proxy and serve still keep
their arguments beside the code they drive (harness/chaos.py, proxy.py, serve.py) and are re-exported here.
"""
