"""Foreign cassettes into ours: vcrpy YAML and JSON (plain or gzip `!!binary` bodies; aiohttp's `istr` header
keys in both their `apply:` and `new:` forms), pydantic-ai's parsed bodies, HAR, langchain's gzip
`.yaml.gz`, one-exchange JSON files, Ruby's VCR, R's vcr, go-vcr v4 and Go's httprr traces.

Internal package: the public names are in `harness` (`from harness import ...`, harness/__init__.py).

The package is one module per concern: `detect` reads a file as data only and names its format; one reader
per foreign format (`vcrpy`, `langchain`, `har`, `one_exchange`, `ruby_vcr`, `r_vcr`, `go_vcr`, `httprr`)
turns its container into `Exchange`s, the request and response as they went over the wire; `convert`
stores each exchange exactly as our recorder would (`wire.store_body`, the header allow-lists,
`redact_interaction`), so an imported cassette and a recorded one cannot drift apart; `single` imports one
file, `batch` files and folders.
"""

from __future__ import annotations

from harness.cassette.importer.batch import ImportFailed, ImportOutcome, import_paths, iter_imports
from harness.cassette.importer.convert import is_anthropic
from harness.cassette.importer.detect import (
    FORMATS,
    GO_VCR,
    HAR,
    HARNESS,
    HTTPRR,
    IMPORTABLE_SUFFIXES,
    LANGCHAIN_YAML,
    LANGCHAIN_YAML_GZ,
    ONE_EXCHANGE_JSON,
    PYDANTIC_AI_YAML,
    R_VCR,
    RUBY_VCR,
    VCRPY_JSON,
    VCRPY_YAML,
)
from harness.cassette.importer.single import SKIPPED_NOTE, detect_format, import_file, load_any_cassette, skipped_note

__all__ = [
    "FORMATS",
    "GO_VCR",
    "HAR",
    "HARNESS",
    "HTTPRR",
    "IMPORTABLE_SUFFIXES",
    "LANGCHAIN_YAML",
    "LANGCHAIN_YAML_GZ",
    "ONE_EXCHANGE_JSON",
    "PYDANTIC_AI_YAML",
    "RUBY_VCR",
    "R_VCR",
    "SKIPPED_NOTE",
    "VCRPY_JSON",
    "VCRPY_YAML",
    "ImportFailed",
    "ImportOutcome",
    "detect_format",
    "import_file",
    "import_paths",
    "is_anthropic",
    "iter_imports",
    "load_any_cassette",
    "skipped_note",
]
