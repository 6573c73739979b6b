"""Example requests per tool: what people asked that each tool answered, added to the tool's document in a
retriever's index, so that a tool is found by requests like the ones it served and not only by its own description
(Tool2Vec's usage-driven tool embeddings; Re-Invoke's example queries written into tool documents).

    examples = ToolExamples.load("examples.json")        # checked: its format, and every entry's shape
    retriever = get_retriever("hybrid").fit(registry, examples.requests)

A file comes from a deployment's logs, from a suite's train split (``toolsel suites SUITE --examples FILE``,
which leaves out every request that a dev or test case also asks), or from a model that writes them for every tool
of a catalog (``toolsel tools examples``, ``tool_selection.retrieval.written``). Evaluating with one refuses any
scored case whose request is among its examples (``among``): the index would hold the answer. Written examples
record the document of each tool they were written from, so that a catalog whose tools changed since, or another
catalog, is refused (``check_catalog``) instead of indexed with examples of other tools.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tool_selection.errors import ToolSelectionError
from tool_selection.registry import ToolRegistry

__all__ = ["EXAMPLES_FORMAT", "ToolExamples", "ToolExamplesError", "same_request"]

EXAMPLES_FORMAT = "tool-selection/tool-examples"


class ToolExamplesError(ToolSelectionError, ValueError):
    """An examples file that cannot be read, or examples that would leak scored requests into an index."""


def same_request(text: str) -> str:
    """``text`` as requests are compared: case and runs of white space aside."""
    return " ".join(text.split()).casefold()


class ToolExamples(BaseModel):
    """Example requests by tool name, and where they came from (``source``: free-form provenance, such as the
    suites, the split and how many cases)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["tool-selection/tool-examples"] = EXAMPLES_FORMAT
    version: Literal[1] = 1
    requests: dict[str, tuple[str, ...]] = Field(description="Tool name -> the requests it answered.")
    source: dict[str, Any] = Field(default_factory=dict)
    documents: dict[str, str] = Field(default_factory=dict, description="Tool name -> hash of the tool document "
                                      "the examples were written from (``document_hash``); empty for requests "
                                      "people asked, which do not depend on how a tool is described.")

    @field_validator("requests")
    @classmethod
    def _not_blank(cls, requests: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        blank = [name for name, texts in requests.items() if not name.strip() or any(not t.strip() for t in texts)]
        if blank:
            raise ValueError(f"blank tool names or requests under: {', '.join(map(repr, blank[:5]))}")
        return requests

    @property
    def fingerprint(self) -> str:
        """A short hash of the requests: two files with the same examples share it."""
        payload = json.dumps(sorted((name, list(texts)) for name, texts in self.requests.items()), ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def __len__(self) -> int:
        return sum(len(texts) for texts in self.requests.values())

    def among(self, requests: Iterable[str]) -> list[str]:
        """Those of ``requests`` that are among the examples (``same_request``), in the order given."""
        held = {same_request(text) for texts in self.requests.values() for text in texts}
        return [text for text in requests if same_request(text) in held]

    def check_catalog(self, registry: ToolRegistry) -> None:
        """Refuse ``registry`` where these examples were written from other tool documents: none of its tools is
        among those they were written for (another catalog), or a tool's document changed since (its examples
        describe what it used to do). Examples without documents (requests people asked) pass."""
        if not self.documents:
            return
        from tool_selection.retrieval._documents import document_hash

        shared = [name for name in registry.names() if name in self.documents]
        rewrite = "write them again for this catalog ('toolsel tools examples ... --out FILE' keeps what is current)"
        if not shared:
            raise ToolExamplesError(
                f"These examples were written for {len(self.documents)} tools, none of which is among the "
                f"{len(registry)} tools listed ({', '.join(registry.names()[:3])}, ...): they are another catalog's; "
                f"{rewrite}.")
        changed = [name for name in shared if self.documents[name] != document_hash(registry.get(name))]
        if changed:
            raise ToolExamplesError(
                f"{len(changed)} {'tool' if len(changed) == 1 else 'tools'} changed since the examples were written "
                f"({', '.join(changed[:5])}): they were written from an earlier description; {rewrite}.")

    def combined(self, other: ToolExamples) -> ToolExamples:
        """These examples and ``other``'s, per tool these first (a tool's document keeps eight in all)."""
        requests = {name: tuple(dict.fromkeys((*self.requests.get(name, ()), *other.requests.get(name, ()))))
                    for name in sorted({*self.requests, *other.requests})}
        return ToolExamples(requests=requests, documents={**other.documents, **self.documents},
                            source={"combined": [self.source, other.source]})

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        exclude = None if self.documents else {"documents"}  # files of asked requests keep their earlier form
        path.write_text(self.model_dump_json(indent=1, exclude=exclude) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> ToolExamples:
        """The examples in ``path``; a missing file, bad JSON or a wrong shape is a ``ToolExamplesError`` naming it."""
        path = Path(path)
        fix = "write one with 'toolsel suites SUITE --examples FILE' or ToolExamples(requests=...).save(FILE)"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ToolExamplesError(f"No examples file at {path}: {fix}.") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ToolExamplesError(f"{path} is not a JSON examples file ({error}): {fix}.") from None
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(file)'}: {e['msg']}"
                                 for e in error.errors(include_url=False)[:5])
            raise ToolExamplesError(f"{path} is not a {EXAMPLES_FORMAT} file ({problems}): {fix}.") from None
