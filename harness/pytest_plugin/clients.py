"""The SDK clients a test is handed: `anthropic_client` and `async_anthropic_client`, whose calls go through
the test's cassette, each closed after the test.

In replay they carry the SDK's defaults with no CA loaded (`_replay_tls_context`); recording keeps the SDK's
own verifying client. With a simulator (--simulator or the `simulator` fixture) they talk to it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from harness.cassette.modes import PLACEHOLDER_API_KEY
from harness.pytest_plugin.simulator import simulator_url

if TYPE_CHECKING:
    import anthropic

    from harness.cassette.recorder import Cassette

__all__ = ["CLIENT_OPTIONS", "anthropic_client", "async_anthropic_client"]

# What `harness_config` may hold beside the cassette options: the client fixtures' own (read by _client_options).
CLIENT_OPTIONS = ("base_url", "max_retries")


def _client_options(harness_config: dict[str, Any], simulator_url: str | None = None) -> dict[str, Any]:
    return {
        # In replay the key is never sent anywhere; when recording, the real one comes from the environment.
        "api_key": os.environ.get("ANTHROPIC_API_KEY") or PLACEHOLDER_API_KEY,
        "base_url": simulator_url or harness_config.get("base_url") or os.environ.get("ANTHROPIC_BASE_URL") or None,
        "max_retries": harness_config.get("max_retries", 2),
    }


def _fail_without_a_key(cassette: Cassette, options: dict[str, Any]) -> None:
    """A test that must record, with no key, no token and no loopback base URL, fails at setup in one line: a
    loop that ends its run on the API's error (harness.run_loop) would fail it later, inside a check."""
    if cassette.write_protected or options["api_key"] != PLACEHOLDER_API_KEY or os.environ.get(
            "ANTHROPIC_AUTH_TOKEN"):
        return
    from harness.cassette.transport import loopback_url

    if not loopback_url(options["base_url"]):
        pytest.fail(f"{cassette.path}: no API key to record it: record with no key against the simulator "
                    "(pytest --record-mode=once --simulator=auto), or set ANTHROPIC_API_KEY", pytrace=False)


_replay_tls: Any = None


def _replay_tls_context() -> Any:
    """One TLS context for every replayed client of the session, with no CA loaded.

    The SDK's own httpx2 client loads the system's CA bundle (`load_verify_locations`, ~36 ms) each time a
    client is built; replay never opens a TLS connection (the cassette answers at the transport, and mode none
    blocks every host but loopback), so that cost bought nothing. This context still requires a verified
    certificate and a matching host name, and trusts no CA: were a replayed request ever to reach TLS, the
    handshake would fail rather than go out unverified. Recording modes keep the SDK's own client.
    """
    global _replay_tls
    if _replay_tls is None:
        import ssl

        _replay_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED by default
    return _replay_tls


def _http_client_option(cassette: Cassette, asynchronous: bool) -> dict[str, Any]:
    """`http_client=` for a replay-only cassette (the SDK's defaults, TLS set-up skipped); nothing otherwise."""
    if getattr(cassette, "mode", None) != "none":
        return {}
    import anthropic

    factory = anthropic.DefaultAsyncHttpxClient if asynchronous else anthropic.DefaultHttpxClient
    return {"http_client": factory(verify=_replay_tls_context())}


@pytest.fixture
def anthropic_client(
    request: pytest.FixtureRequest, cassette: Cassette, harness_config: dict[str, Any]
) -> Iterator[anthropic.Anthropic]:
    """An `anthropic.Anthropic` whose calls go through this test's cassette."""
    import anthropic

    options = _client_options(harness_config, simulator_url(request))
    _fail_without_a_key(cassette, options)
    with anthropic.Anthropic(**options, **_http_client_option(cassette, asynchronous=False)) as client:
        yield client


@pytest.fixture
def async_anthropic_client(
    request: pytest.FixtureRequest, cassette: Cassette, harness_config: dict[str, Any]
) -> Iterator[anthropic.AsyncAnthropic]:
    """An `anthropic.AsyncAnthropic` whose calls go through this test's cassette (use it inside any loop);
    closed after the test."""
    import anthropic

    options = _client_options(harness_config, simulator_url(request))
    _fail_without_a_key(cassette, options)
    with contextlib.closing(
        _AsyncClosing(
            anthropic.AsyncAnthropic(
                **options,
                **_http_client_option(cassette, asynchronous=True),
            )
        )
    ) as closing:
        yield closing.client


class _AsyncClosing:
    """An async client closed from synchronous teardown: its own close, run to the end on a loop of its own
    (the test's loop has ended by then; a connection bound to it is dropped with it)."""

    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self.client = client

    def close(self) -> None:
        import asyncio

        if not self.client.is_closed():
            with contextlib.suppress(RuntimeError, OSError):  # a transport bound to the test's closed loop
                asyncio.run(self.client.close())
