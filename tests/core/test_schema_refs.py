"""A tool schema's ``$ref`` never makes the toolkit fetch a URL: remote references are refused when a tool is
defined, on every path a foreign schema enters by, and the validator itself retrieves nothing."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import BaseModel, Field

from evals.suite import Case, registry_for
from tool_selection import ToolDefinitionError
from tool_selection.interop import SchemaOnlyTool, from_anthropic, from_bfcl, from_mcp, from_openai
from tool_selection.schema_refs import outside_references
from tool_selection.tool import BaseTool

LOCAL = {"type": "object", "properties": {"sku": {"$ref": "#/$defs/sku"}}, "required": ["sku"],
         "$defs": {"sku": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"}}}


@pytest.fixture
def schema_server():
    """A server that serves a permissive schema at every path and counts the requests it gets."""
    requests = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            requests.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", requests
    server.shutdown()
    server.server_close()


def remote(url: str) -> dict:
    return {"type": "object", "properties": {"sku": {"$ref": f"{url}/sku.json"}}, "required": ["sku"]}


def imports(url: str):
    """Every way a foreign schema becomes a tool, each given the same remote reference."""
    schema = remote(url)
    case = Case(id="remote-ref", request="Is SKU-7 in stock?", expected_calls=[],
                tools=[{"type": "function", "function": {"name": "check_inventory", "description": "Stock.",
                                                         "parameters": schema}}])
    return {
        "openai": lambda: from_openai([{"name": "check_inventory", "description": "Stock.", "parameters": schema}]),
        "anthropic": lambda: from_anthropic([{"name": "check_inventory", "input_schema": schema}]),
        "mcp": lambda: from_mcp({"tools": [{"name": "check_inventory", "inputSchema": schema}]}),
        "suite inline tools": lambda: registry_for(case),
    }


@pytest.mark.parametrize("path", ["openai", "anthropic", "mcp", "suite inline tools"])
def test_a_remote_reference_is_refused_at_import_and_nothing_is_fetched(schema_server, path):
    url, requests = schema_server
    with pytest.raises(ToolDefinitionError) as refused:
        imports(url)[path]()
    assert f"$ref '{url}/sku.json' refers outside the schema, which is never fetched" in str(refused.value)
    assert "refer to it as '#/$defs/NAME'" in str(refused.value) and "check_inventory" in str(refused.value)
    assert requests == []


def test_bfcl_imports_carry_no_references():
    """BFCL's own schema dialect has no ``$ref``; the import keeps only the keywords it maps."""
    tool = from_bfcl([{"name": "check_inventory", "parameters": {
        "type": "dict", "properties": {"sku": {"type": "string", "$ref": "http://127.0.0.1:9/sku.json"}}}}])
    assert "$ref" not in str(tool.get("check_inventory").input_schema())


def test_local_references_keep_working():
    tool = from_openai([{"name": "check_inventory", "description": "Stock.", "parameters": LOCAL}]).get(
        "check_inventory")
    assert tool.check_arguments({"sku": "AB-7"}) == []
    assert [p.field for p in tool.check_arguments({"sku": "seven"})] == ["sku"]
    assert outside_references({**LOCAL, "$id": "https://example.com/inventory",
                               "properties": {"sku": {"$ref": "https://example.com/inventory#/$defs/sku"}}}) == []
    # data that merely looks like a reference is not one
    assert outside_references({"type": "object", "default": {"$ref": "http://127.0.0.1:9/x"}}) == []


def test_a_reference_to_nothing_in_the_schema_is_refused_too():
    assert outside_references({"type": "object", "properties": {"sku": {"$ref": "#/$defs/missing"}}}) == [
        "$ref '#/$defs/missing' points to nothing in the schema"]
    relative = outside_references({"properties": {"a": {"$id": "https://example.com/a/",
                                                        "properties": {"b": {"$ref": "b.json"}}}}})
    assert relative and "'b.json' refers outside the schema" in relative[0]


def test_a_tool_class_with_a_remote_reference_in_its_arguments_is_refused():
    """Defined in code, the schema goes to llama.cpp's grammar converter, which fetches https references."""
    with pytest.raises(ToolDefinitionError, match="argument schema: \\$ref 'https://127.0.0.1:9/sku.json' refers"):
        class CheckInventory(BaseTool):
            NAME = "check_inventory"
            description = "Stock of a product."

            class Arguments(BaseModel):
                sku: str = Field(description="The product.", json_schema_extra={"$ref": "https://127.0.0.1:9/sku.json"})


def test_the_validator_itself_never_fetches(schema_server):
    """Defence in depth: a schema that changes after its tool was defined still reaches no URL."""
    url, requests = schema_server

    class Changing(SchemaOnlyTool):
        NAME = "check_inventory"
        description = "Stock."
        PARAMETERS = {"type": "object", "properties": {"sku": {"type": "string"}}}

    Changing.PARAMETERS = remote(url)
    with pytest.raises(ToolDefinitionError, match="only references inside the schema are resolved"):
        Changing.check_arguments({"sku": 7})
    assert requests == []
