"""Loaded at start by every Python child of a guarded process (this folder is first on its PYTHONPATH): the egress
guard on for good in the child, then the sitecustomize this one shadows, if any, as if this one were not there.

Loads harness/egress/guard.py by its path, so it works in an interpreter where harness is not installed.
"""

import importlib
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _guard() -> None:
    hint = os.environ.get("HARNESS_EGRESS_GUARD")
    if not hint or not hasattr(sys, "addaudithook"):  # audit hooks came with Python 3.8
        return
    spec = importlib.util.spec_from_file_location("_loop_harness_egress_guard",
                                                  os.path.join(os.path.dirname(_HERE), "guard.py"))
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # registered before it runs, as importlib does for any module
    spec.loader.exec_module(module)
    module.enforce_in_child(hint)


def _chain() -> None:
    """Import the next sitecustomize on the path (a venv's, coverage's), as site would have."""
    saved = sys.path[:]
    this = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]
        importlib.import_module("sitecustomize")
    except ModuleNotFoundError as err:
        if err.name != "sitecustomize":
            raise
        if this is not None:
            sys.modules["sitecustomize"] = this
    finally:
        sys.path[:] = saved


_guard()
_chain()
