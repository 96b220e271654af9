"""The pytest integration as a package: every client a fixture makes is closed, the network block is its own
module entered by the cassette fixture, and the plugin reaches pytest through its public API only."""

from __future__ import annotations

import ast
import socket

import pytest

from harness.pytest_plugin.network import NetworkBlocked, network_blocked
from tests.conftest import REPO

pytest_plugins = ["pytester"]


def test_both_client_fixtures_are_closed_after_the_test(pytester: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-unused")  # recording mode with no key fails at setup; none is sent
    pytester.makepyfile(test_clients='''
        clients = []

        def test_uses_them(anthropic_client, async_anthropic_client):
            clients.extend([anthropic_client, async_anthropic_client])
            assert not anthropic_client.is_closed() and not async_anthropic_client.is_closed()

        def test_after():
            assert [client.is_closed() for client in clients] == [True, True]
    ''')
    pytester.runpytest("--record-mode=once", "-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_the_network_block_refuses_a_host_and_lets_loopback_through() -> None:
    with network_blocked():
        with pytest.raises(NetworkBlocked, match=r"blocked a connection to 192\.0\.2\.1:443"):
            socket.create_connection(("192.0.2.1", 443), timeout=1)
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            with socket.create_connection(listener.getsockname(), timeout=1):
                pass
    assert socket.socket.connect.__name__ == "connect"  # put back on the way out


def test_the_plugin_uses_no_private_attribute_of_pytest() -> None:
    """No `parser._groups`, `option._attrs` or `_action`: only what pytest documents (Parser.getgroup,
    OptionGroup.options, Argument.attrs/names)."""
    private = []
    for path in sorted((REPO / "harness" / "pytest_plugin").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and isinstance(node.value, ast.Name) and node.value.id in ("parser", "option", "group", "config",
                                                                                "pluginmanager", "manager"):
                private.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    assert private == []
