"""The exposure rules of MCP over HTTP: what counts as loopback, and what serving off loopback requires."""

import pytest

from tool_selection.errors import ToolSelectionError
from tool_selection.mcp.access import TOKEN_ENV, check_exposure, is_loopback
from tool_selection.toolset import load_tool_set

TOKEN = "test-token-0123456789"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"])
def test_loopback_addresses(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.168.1.10", "10.0.0.1", "no-such-host.invalid"])
def test_addresses_that_are_not_loopback(host):
    assert not is_loopback(host)


def test_off_loopback_a_token_and_an_explicit_allowance_for_host_access_tools_are_required():
    code = load_tool_set("code")
    with pytest.raises(ToolSelectionError) as refused:
        check_exposure("0.0.0.0", code, token=None, allow_host_access=False)
    message = str(refused.value)
    assert message.startswith("Refusing to serve MCP on '0.0.0.0', which is not a loopback address: it needs a "
                              "bearer token (toolsel mcp serve --token TOKEN or $TOOLSEL_MCP_TOKEN;")
    assert "run_python, run_javascript, run_bash run programs or read files on this machine" in message
    assert "--allow-host-access" in message
    with pytest.raises(ToolSelectionError, match="read_file.* run programs or read files"):
        check_exposure("0.0.0.0", load_tool_set("files"), token=TOKEN, allow_host_access=False)
    check_exposure("0.0.0.0", code, token=TOKEN, allow_host_access=True)
    check_exposure("0.0.0.0", load_tool_set("finance"), token=TOKEN, allow_host_access=False)
    check_exposure("127.0.0.1", code, token=None, allow_host_access=False)  # this machine only, as before


@pytest.mark.parametrize("command", ["serve", "list"])
def test_the_cli_names_the_token_variable_it_reads(command, capsys):
    from tool_selection.cli import main

    with pytest.raises(SystemExit):
        main(["mcp", command, "--help"])
    assert f"${TOKEN_ENV}" in " ".join(capsys.readouterr().out.split())
