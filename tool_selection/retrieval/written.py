"""Example requests written by a model for every tool of a catalog, once, at indexing time.

Requests people asked (a deployment's logs, a suite's train split) exist only for the tools that answered them. A
model can write some for every tool: Re-Invoke (Chen et al., 2024) writes example queries into each tool's document
so that a retriever meets a tool in the words of its users, not only those of its description. Here the model
writes three requests per tool from the tool's document, with two fixed demonstrations, greedily; the result is a
``ToolExamples`` file that records each tool's document hash (so that a changed tool or another catalog is refused
on use), the model, this writer's version and the seconds it took, and that a later run resumes: tools whose
document is unchanged keep their requests.

    examples = write_examples(registry, get_lm("local:qwen2.5-coder-0.5b", constrained=True), path="written.json")
    retriever = get_retriever("hybrid").fit(registry, examples.requests)

The command: ``toolsel tools examples --out FILE [--set NAME] [--model MODEL]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import dspy
from dspy.utils.exceptions import AdapterParseError

from tool_selection.registry import ToolRegistry
from tool_selection.retrieval._documents import document_hash, tool_document
from tool_selection.retrieval.examples import ToolExamples, ToolExamplesError, same_request
from tool_selection.tool import BaseTool

__all__ = ["WRITER_VERSION", "WriteRequests", "write_examples", "write_examples_shown", "written_requests"]

WRITER_VERSION = 1  # bump when the instructions or demonstrations change: earlier files are then refused on resume
SAVE_EVERY = 20  # tools between saves of a file being written
MAX_TOKENS = 150  # three requests; an answer cut here (a runaway list) does not parse and costs its tool


class WriteRequests(dspy.Signature):
    """Write three requests a user might type to an assistant that this tool would answer. Each request is a full
    sentence in everyday words with concrete values, and does not name the tool."""

    tool: str = dspy.InputField(desc="the tool's name, description and arguments")
    first: str = dspy.OutputField()
    second: str = dspy.OutputField()
    third: str = dspy.OutputField()


_DEMOS = (
    dspy.Example(tool="get_weather (get weather): Current weather for a city.\ncity: City name\n"
                      "units: Temperature units (one of celsius, fahrenheit)",
                 first="What's the weather like in Lisbon right now?",
                 second="Is it raining in Toronto? Give me the temperature in fahrenheit.",
                 third="How warm is it in Osaka today?").with_inputs("tool"),
    dspy.Example(tool="convert_units (convert units): Convert a quantity between units of measure.\n"
                      "value: The amount\nfrom unit: Unit to convert from\nto unit: Unit to convert to",
                 first="How many kilometres is 26.2 miles?", second="Convert 350 grams to ounces.",
                 third="What is 72 inches in centimetres?").with_inputs("tool"),
)
_DEMO_REQUESTS = {same_request(demo[field]) for demo in _DEMOS for field in ("first", "second", "third")}


def _writer() -> dspy.Predict:
    predict = dspy.Predict(WriteRequests)
    predict.demos = list(_DEMOS)
    return predict


def written_requests(predict: dspy.Predict, tool: type[BaseTool]) -> tuple[str, ...]:
    """The distinct requests the model writes for ``tool``, without copies of the demonstrations' requests; none
    where its answer does not parse (a malformed answer costs that tool its examples, not the run)."""
    try:
        answer = predict(tool=tool_document(tool))
    except (AdapterParseError, ValueError) as error:
        print(f"  {tool.NAME}: no requests ({type(error).__name__})", file=sys.stderr)
        return ()
    texts = (" ".join(str(answer[field] or "").split()) for field in ("first", "second", "third"))
    kept: dict[str, str] = {}  # the first of each request, as compared (``same_request``)
    for text in texts:
        if text and same_request(text) not in _DEMO_REQUESTS:
            kept.setdefault(same_request(text), text)
    return tuple(kept.values())


def _resumed(path: Path | None, model: str) -> ToolExamples | None:
    if path is None or not path.exists():
        return None
    earlier = ToolExamples.load(path)
    writer = earlier.source.get("writer")
    if writer != {"version": WRITER_VERSION, "model": model}:
        raise ToolExamplesError(f"{path} holds examples written by {writer or 'people, not a model'}, not by this "
                                f"writer (version {WRITER_VERSION}) with {model}: give another --out, or remove it.")
    return earlier


def write_examples(registry: ToolRegistry, lm: dspy.BaseLM, *, path: str | Path | None = None,
                   progress: Callable[[int, int, str], None] | None = None) -> ToolExamples:
    """Requests ``lm`` writes for each tool of ``registry`` (``WriteRequests``), saved to ``path`` every
    ``SAVE_EVERY`` tools and when the run ends, however it ends. Where ``path`` holds examples from this writer and model, the tools whose
    document is unchanged keep theirs and are not written again; tools no longer listed are dropped."""
    path = None if path is None else Path(path)
    model = str(getattr(lm, "model", lm))
    earlier = _resumed(path, model)
    requests, documents, seconds = {}, {}, 0.0
    if earlier is not None:
        seconds = float(earlier.source.get("seconds", 0.0))
        for tool in registry.tools():
            if earlier.documents.get(tool.NAME) == document_hash(tool):
                documents[tool.NAME] = earlier.documents[tool.NAME]
                if tool.NAME in earlier.requests:
                    requests[tool.NAME] = earlier.requests[tool.NAME]
    predict, todo = _writer(), [tool for tool in registry.tools() if tool.NAME not in documents]

    def current() -> ToolExamples:
        source = {"writer": {"version": WRITER_VERSION, "model": model}, "tools": len(documents),
                  "requests": sum(map(len, requests.values())), "seconds": round(seconds, 1)}
        return ToolExamples(requests=dict(sorted(requests.items())), documents=dict(sorted(documents.items())),
                            source=source)

    try:
        with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):  # what DSPy uses unless told otherwise, pinned
            for done, tool in enumerate(todo, start=1):
                started = time.perf_counter()
                written = written_requests(predict, tool)
                seconds += time.perf_counter() - started
                documents[tool.NAME] = document_hash(tool)
                if written:
                    requests[tool.NAME] = written
                if progress is not None:
                    progress(done, len(todo), tool.NAME)
                if path is not None and done % SAVE_EVERY == 0:
                    current().save(path)
    finally:  # a run stopped by an error or by hand keeps every tool it finished
        if path is not None:
            current().save(path)
    return current()


def write_examples_shown(registry: ToolRegistry, model: str, path: str | Path) -> ToolExamples:
    """``write_examples`` by ``model`` (a model spec) into ``path``, with a progress bar over the tools left to
    write and what was written said at the end: the command's and the scale benchmark's way to run it."""
    from tqdm.auto import tqdm

    from tool_selection.lm import get_lm

    lm = get_lm(model, constrained=True, max_tokens=MAX_TOKENS)
    with tqdm(total=len(registry), desc="writing example requests", unit="tool") as bar:
        def advance(done: int, total: int, name: str) -> None:
            bar.total = total  # a resumed file leaves fewer to write
            bar.update(done - bar.n)
            bar.set_postfix_str(name[:30])

        examples = write_examples(registry, lm, path=path, progress=advance)
    print(f"{len(examples):,} requests for {len(examples.requests):,} of {len(registry):,} tools "
          f"({examples.source['seconds']:,.0f} s of writing in all): {path}")
    return examples
