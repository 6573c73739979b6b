"""``$ref``s in tool schemas resolve inside the schema only: no schema makes the toolkit fetch a URL.

A schema from elsewhere (an MCP server, a suite file, an OpenAI, Anthropic or BFCL import) can point a ``$ref`` at
``http://...``. jsonschema's default registry fetches such a reference while validating a call's arguments, with
no timeout, and llama.cpp's grammar converter fetches ``https://`` ones while building a grammar. So a tool whose
schema refers outside itself is refused when it is defined (``outside_references``, called for every tool class),
and the validators the toolkit builds resolve references within the schema only (``LOCAL_ONLY``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema_specifications import REGISTRY as METASCHEMAS
from referencing import Registry
from referencing.exceptions import InvalidAnchor, NoSuchAnchor, PointerToNowhere, Unresolvable
from referencing.jsonschema import DRAFT202012, SchemaResource

__all__ = ["LOCAL_ONLY", "outside_references"]

LOCAL_ONLY: Registry = Registry()
"""A registry for ``jsonschema`` validators (``registry=LOCAL_ONLY``) that retrieves nothing: a ``$ref`` resolves
within its schema (or to a bundled JSON Schema metaschema), else validation raises ``Unresolvable``."""

_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef")


def outside_references(schema: Any) -> list[str]:
    """One line for each ``$ref`` in ``schema`` (JSON Schema 2020-12) that does not resolve inside it: a URL or
    another document, which would have to be fetched, or a pointer to nothing. Empty when every reference is
    local (``#/$defs/NAME``, ``#anchor``, an ``$id`` the schema itself declares). A local reference's target is
    checked too, also where it lies under a keyword JSON Schema does not know (``#/x-lib/q``), since validation
    follows it there."""
    root = DRAFT202012.create_resource(schema)
    resolver = METASCHEMAS.combine(LOCAL_ONLY).resolver_with_root(root)
    return list(_unresolved(root, resolver, set()))


def _unresolved(resource: SchemaResource, resolver: Any, seen: set[int]) -> Iterator[str]:
    if id(resource.contents) in seen:
        return
    seen.add(id(resource.contents))
    resolver = resolver.in_subresource(resource)
    contents = resource.contents
    if isinstance(contents, dict):
        for keyword in _REFERENCE_KEYWORDS:
            ref = contents.get(keyword)
            if not isinstance(ref, str):
                continue
            try:
                resolved = resolver.lookup(ref)
            except (PointerToNowhere, NoSuchAnchor, InvalidAnchor):
                yield f"{keyword} {ref!r} points to nothing in the schema"
            except Unresolvable:
                yield (f"{keyword} {ref!r} refers outside the schema, which is never fetched: copy the schema it "
                       "names under $defs and refer to it as '#/$defs/NAME'")
            else:
                if isinstance(resolved.contents, dict):
                    target = DRAFT202012.create_resource(resolved.contents)
                    yield from _unresolved(target, resolved.resolver, seen)
    for subresource in resource.subresources():
        yield from _unresolved(subresource, resolver, seen)
