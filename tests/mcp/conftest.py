"""Module-scoped HTTP MCP servers shared by the tests of a module."""

from collections.abc import Iterator

import pytest

from tests.mcp.servers import CHANGING_STDIO, TREASURE_STDIO, free_port, http_server


@pytest.fixture(scope="module")
def treasure_url() -> Iterator[str]:
    """``toolsel mcp serve treasure_hunt --http PORT --page-size 5``."""
    port = free_port()
    with http_server([*TREASURE_STDIO, "--http", str(port)], port) as url:
        yield url


@pytest.fixture(scope="module")
def changing_url() -> Iterator[str]:
    port = free_port()
    with http_server([*CHANGING_STDIO, str(port)], port) as url:
        yield url
