"""Tolerant parsers for the tool calls models write as text. They never raise.

Small models answer their own tool-calling format loosely: Qwen2.5 writes ``<tool_call>{...}</tool_call>`` tags
or, as often, a ```` ```json ```` fence holding ``{"name": ..., "arguments": ...}``, or a bare object; the text
protocols have their own shapes. Each parser returns a ``ParsedAnswer``: the calls it recovered, the prose left
around them, and a note for every fragment that looked like a call but could not be read. Answers are capped in
size, and JSON is checked for nesting depth before it is parsed, so no answer, however pathological (deep
nesting, huge numbers, lone surrogates), can raise out of a parser.

A call fragment that is not JSON as written but states one value plainly is mended, never guessed at: Python's
quotes (``['Sam', 'Alice']``), closing brackets left off at the end, or one too many. Nothing is invented: a
fragment cut off inside a string or after a ``:`` or ``,`` stays a failure. Every mend is noted
(``ParsedAnswer.repairs``).
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tool_selection.decision import ToolCall

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_JSON_DEPTH",
    "ParsedAnswer",
    "call_arguments",
    "call_json",
    "load_json",
    "mended_json",
    "name_words",
    "native_calls_start",
    "nesting_depth",
    "parse_call_lines",
    "parse_fenced_tool_blocks",
    "parse_native",
    "parse_tool_tags",
    "safe_text",
    "safe_value",
    "too_large",
    "words",
]

MAX_ANSWER_CHARS = 20_000  # a decision is a few hundred characters; more is a model looping
MAX_JSON_DEPTH = 32
MAX_CALLS = 16


@dataclass
class ParsedAnswer:
    """What a parser recovered from an answer."""

    calls: list[ToolCall] = field(default_factory=list)
    text: str = ""  # the prose outside the calls (an abstention's explanation, or a thought before the calls)
    failures: list[str] = field(default_factory=list)  # fragments that looked like calls but could not be read
    repairs: list[str] = field(default_factory=list)  # fragments read once mended (not JSON as written)

    @property
    def failed(self) -> bool:
        """Nothing usable: a fragment could not be read and no call was recovered."""
        return bool(self.failures) and not self.calls


def safe_text(text: Any, limit: int = MAX_ANSWER_CHARS) -> str:
    """``text`` as a string that encodes to UTF-8 (lone surrogates replaced), cut to ``limit`` characters."""
    text = text if isinstance(text, str) else ("" if text is None else str(text))
    text = text[:limit]
    return text.encode("utf-8", errors="replace").decode("utf-8")


def clip(text: str, limit: int) -> str:
    """``text`` whole when it fits in ``limit`` characters, else its start and "..." in ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def safe_value(value: Any, limit: int = MAX_ANSWER_CHARS) -> Any:
    """``value`` (JSON-like) with every string, key included, made encodable by ``safe_text``."""
    if isinstance(value, str):
        return safe_text(value, limit)
    if isinstance(value, dict):
        return {safe_text(str(k), limit): safe_value(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe_value(v, limit) for v in value]
    return value


_NAME_PARTS = re.compile(r"[^A-Za-z0-9]+")
# An acronym before a capitalised word (HTTP|Request), a capitalised or lower-case word, a run of capitals, digits.
_NAME_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def name_words(name: str) -> str:
    """An identifier as lower-case words: ``getHTTPResponse_v2`` -> ``get http response v 2``."""
    return " ".join(word.lower() for part in _NAME_PARTS.split(name) for word in _NAME_WORDS.findall(part))


def words(text: str) -> str:
    """``text`` lower-cased with every run of characters that are not letters or digits made one space."""
    return " ".join("".join(ch.lower() if ch.isalnum() else " " for ch in text).split())


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting in ``text``, outside JSON strings."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def too_large(text: str) -> str | None:
    """Why ``text`` is beyond what a parser should take on (too long, nested too deep), or None."""
    if len(text) > MAX_ANSWER_CHARS:
        return f"longer than {MAX_ANSWER_CHARS} characters"
    if nesting_depth(text) > MAX_JSON_DEPTH:
        return f"nested deeper than {MAX_JSON_DEPTH} levels"
    return None


def load_json(text: str) -> tuple[Any, str | None]:
    """``(value, None)`` for JSON text within the size and depth caps, else ``(None, why)``."""
    problem = too_large(text)
    if problem:
        return None, problem
    try:
        return json.loads(text), None
    except (ValueError, RecursionError, MemoryError) as error:
        return None, f"not valid JSON ({type(error).__name__}: {str(error)[:80]})"


def _as_call(item: Any) -> ToolCall | None:
    """A call from the object shapes models write: ``{"name"|"tool_name"|"function": ..., "arguments"|
    "parameters"|"args": {...} or a JSON string}``, or OpenAI's ``{"function": {"name", "arguments"}}``."""
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = item.get("name", item.get("tool_name", item.get("function")))
    arguments = call_arguments(item, ("arguments", "parameters", "args"))
    if not isinstance(name, str) or not name.strip() or arguments is None:
        return None
    return ToolCall(tool_name=name.strip(), arguments=arguments)


def call_arguments(call: dict[str, Any], keys: tuple[str, ...] = ("arguments",)) -> dict[str, Any] | None:
    """The arguments a call object holds under the first of ``keys`` it has: a JSON object, or a string of one (an
    empty string, as some servers send for a call without arguments, is none). No key at all means no arguments;
    anything else (``null``, a list, a number, text that is not a JSON object) is None: an unreadable call."""
    key = next((key for key in keys if key in call), None)
    if key is None:
        return {}
    arguments = call[key]
    if isinstance(arguments, str):
        arguments, problem = load_json(arguments) if arguments.strip() else ({}, None)
        if problem:
            return None
    return arguments if isinstance(arguments, dict) else None


def _undoubled(text: str, start: int = 0) -> tuple[Any, int] | None:
    """``{{"name": ..., "arguments": {...}}}``: Qwen2.5's chat template shows its call format with doubled braces
    (literal text inside a Jinja string) and models copy them. The object inside, and where its braces end."""
    if not text.startswith("{{", start):
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(text, start + 1)
    except (ValueError, RecursionError):
        return None
    while end < len(text) and text[end] == "}":
        end += 1
    return value, end


def _values_in_a_row(text: str, *, commas: bool = False):
    """``(value, end)`` for each JSON value one after another from the start of ``text`` (doubled braces read),
    ``end`` past the whitespace (and, with ``commas``, commas) that follows it; stops at the first that does not
    decode."""
    decoder, position = json.JSONDecoder(), 0
    while position < len(text):
        try:
            value, position = _undoubled(text, position) or decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            return
        while position < len(text) and (text[position].isspace() or (commas and text[position] == ",")):
            position += 1
        yield value, position


def _call_objects_in_a_row(text: str) -> list[Any] | None:
    """``{...}\n{...}``: the values of a block holding several JSON objects one after another (JSON lines, as small
    models write several calls in one fence), if the objects fill the whole block; else None."""
    read = list(itertools.islice(_values_in_a_row(text, commas=True), MAX_CALLS))
    return [value for value, _ in read] if len(read) > 1 and read[-1][1] == len(text) else None


_JSON_NAMES = {"true": True, "false": False, "null": None}


class _JsonNames(ast.NodeTransformer):
    """JSON's literals inside a Python literal; any other bare name is not a value."""

    def visit_Name(self, node: ast.Name) -> ast.Constant:
        if node.id not in _JSON_NAMES:
            raise ValueError(f"bare name {node.id!r}")
        return ast.copy_location(ast.Constant(_JSON_NAMES[node.id]), node)


def _python_literal(text: str) -> Any | None:
    """JSON written with Python's quotes (``{'a': ['Sam']}``), as small models do: the value as JSON would hold it
    (tuples as lists), or None, also for what JSON cannot hold (sets, bytes, complex numbers)."""
    try:
        return json.loads(json.dumps(ast.literal_eval(_JsonNames().visit(ast.parse(text, mode="eval")))))
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return None


def _closed(text: str) -> str | None:
    """``text`` with the brackets it leaves open closed, if it stops between values (not inside a string, not after
    a ``:`` or ``,``); None if it closes everything it opens, or mismatches a bracket."""
    expected, quote, escaped = [], None, False
    for char in text:
        if quote:
            escaped, quote = (False, quote) if escaped else (char == "\\", None if char == quote else quote)
        elif char in "\"'":
            quote = char
        elif char in "{[":
            expected.append("}" if char == "{" else "]")
        elif char in "}]" and (not expected or expected.pop() != char):
            return None
    if quote or not expected or text.rstrip()[-1:] in (":", ","):
        return None
    return text + "".join(reversed(expected))


def mended_json(text: str) -> tuple[Any, str] | None:
    """The one value a fragment that is not JSON as written plainly states, and what was mended; else None."""
    try:
        value, end = json.JSONDecoder().raw_decode(text)
        extra = text[end:].strip()
        if extra and not extra.strip("}]"):
            return value, "a closing bracket too many dropped"
    except (ValueError, RecursionError):
        pass
    closed = _closed(text)
    if closed is not None:
        value, problem = load_json(closed)
        if problem is None:
            return value, "closing brackets added"
    for candidate, what in ((text, "Python quotes read"), (closed, "Python quotes read, closing brackets added")):
        if candidate is not None and (value := _python_literal(candidate)) is not None:
            return value, what
    return None


def _calls_from_json(text: str, parsed: ParsedAnswer, where: str) -> bool:
    """Add the calls in one JSON fragment (an object, a list of them, or objects one after another; mended if it
    plainly states one value, see ``mended_json``); note it if unreadable."""
    text = text.strip()
    undoubled = _undoubled(text) if not too_large(text) else None
    value, problem = (undoubled[0], None) if undoubled and undoubled[1] == len(text) else load_json(text)
    if problem and not too_large(text) and (in_a_row := _call_objects_in_a_row(text)):
        value, problem = in_a_row, None
    if problem and not too_large(text) and (mended := mended_json(text)) is not None:
        parsed.repairs.append(f"{where}: {mended[1]}: {safe_text(text, 200)}")
        value, problem = mended[0], None
    if problem:
        parsed.failures.append(f"{where}: {problem}: {safe_text(text, 200)}")
        return False
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item) for item in items]
    if not items or any(call is None for call in calls):
        parsed.failures.append(f"{where}: not a call object ({{'name', 'arguments'}}, the arguments a JSON object): "
                               f"{safe_text(text, 200)}")
        return False
    parsed.calls.extend(calls[: MAX_CALLS - len(parsed.calls)])
    return True


def _parse_blocks(text: str, pattern: re.Pattern, where: str) -> ParsedAnswer:
    """Calls from every block ``pattern`` matches (its group ``body`` holds the JSON); the rest is prose."""
    text = safe_text(text)
    parsed, prose, last = ParsedAnswer(), [], 0
    for match in pattern.finditer(text):
        prose.append(text[last:match.start()])
        last = match.end()
        _calls_from_json(match.group("body"), parsed, where)
    prose.append(text[last:])
    parsed.text = "".join(prose).strip()
    return parsed


# A block's body runs to its closing tag or fence, or to the end; its surrounding whitespace is stripped in Python
# (``_calls_from_json``), because a lazy body followed by ``\s*`` backtracks over every run of spaces: quadratic.
_TOOL_CALL_TAG = re.compile(r"<tool_call>(?P<body>.*?)(?:</tool_call>|$)", re.DOTALL)
_JSON_FENCE = re.compile(r"```(?:json|tool_call|tool_code)?[ \t]*\n?(?P<body>[\[{].*?)(?:```|$)", re.DOTALL)


def _leading_bare_calls(text: str, parsed: ParsedAnswer) -> bool:
    """Bare call objects one after another (``{...} {...}``): the calls, exact repeats dropped, up to the first
    value that is not a call; what follows is prose. Without its tags a small model does not stop after its call:
    it writes an imagined tool result, or the same call again until ``max_tokens``."""
    position, calls = 0, []
    for value, end in _values_in_a_row(text):
        call = _as_call(value)
        if call is None:
            break
        if call not in calls:
            calls.append(call)
        position = end
        if len(calls) == MAX_CALLS:
            break
    if not calls:
        return False
    parsed.calls.extend(calls)
    parsed.text = text[position:].strip()
    return True


def call_json(call: ToolCall) -> str:
    """``call`` as the JSON object the parsers here read back: ``{"name": ..., "arguments": {...}}``."""
    return json.dumps({"name": call.tool_name, "arguments": call.arguments}, ensure_ascii=False)


def parse_native(text: str) -> ParsedAnswer:
    """The model's own format: ``<tool_call>`` blocks, else ```` ```json ```` fences, else a bare JSON answer
    (several bare call objects in a row are read by ``_leading_bare_calls``).

    Text with none of these is prose (an answer without a call). An opened tag or fence whose content is not
    a call object is a failure."""
    text = safe_text(text)
    if "<tool_call>" in text:
        return _parse_blocks(text, _TOOL_CALL_TAG, "<tool_call> block")
    if "```" in text and _JSON_FENCE.search(text):
        return _parse_blocks(text, _JSON_FENCE, "fenced JSON")
    stripped = text.strip()
    if stripped[:1] in "[{" and stripped:
        parsed = ParsedAnswer()
        if too_large(stripped) or not _leading_bare_calls(stripped, parsed):
            _calls_from_json(stripped, parsed, "JSON answer")
        return parsed
    return ParsedAnswer(text=stripped)


def native_calls_start(text: str) -> int | None:
    """Where the calls of a native answer begin: its first ``<tool_call>`` tag, else its first JSON fence (where
    ``parse_native`` reads them); None for prose or a bare JSON answer."""
    match = _TOOL_CALL_TAG.search(text) if "<tool_call>" in text else _JSON_FENCE.search(text)
    return match.start() if match else None


_TOOL_FENCE = re.compile(r"```tool[ \t]*\n(?P<body>.*?)(?:```|$)", re.DOTALL)
_TOOL_TAG = re.compile(r"<tool>(?P<body>.*?)(?:</tool>|$)", re.DOTALL)


def parse_fenced_tool_blocks(text: str) -> ParsedAnswer:
    """```` ```tool ```` fences, each holding one JSON call object (or a list of them)."""
    return _parse_blocks(text, _TOOL_FENCE, "```tool block")


def parse_tool_tags(text: str) -> ParsedAnswer:
    """``<tool>{"name": ..., "arguments": {...}}</tool>`` tags."""
    return _parse_blocks(text, _TOOL_TAG, "<tool> tag")


_CALL_LINE = re.compile(r"^[ \t]*TOOL_CALL\s*:\s*(?P<call>.*)$", re.MULTILINE)  # not ^\s*: quadratic over blank lines
_CALL_SHAPE = re.compile(r"^(?P<name>[A-Za-z_][\w.\-]*)\s*\((?P<args>.*)\)\s*$", re.DOTALL)


def _literal(node: ast.expr) -> Any:
    """A keyword value: a Python or JSON literal; a bare word (``city=Paris``) is read as its text."""
    if isinstance(node, ast.Name):
        return {"true": True, "false": False, "null": None, "none": None}.get(node.id.lower(), node.id)
    return ast.literal_eval(node)


def parse_call_lines(text: str) -> ParsedAnswer:
    """``TOOL_CALL: name(arg=value, ...)`` lines; values are Python or JSON literals (bare words as text)."""
    text = safe_text(text)
    parsed, prose, last = ParsedAnswer(), [], 0
    for match in _CALL_LINE.finditer(text):
        prose.append(text[last:match.start()])
        last = match.end()
        line = match.group("call").strip()
        shape = _CALL_SHAPE.match(line)
        if not shape or nesting_depth(line) > MAX_JSON_DEPTH:
            parsed.failures.append(f"TOOL_CALL line: not name(arg=value, ...): {safe_text(line, 200)}")
            continue
        try:
            call = ast.parse(f"f({shape.group('args')})", mode="eval").body
            if call.args:
                raise ValueError("positional arguments")
            arguments = {kw.arg: _literal(kw.value) for kw in call.keywords if kw.arg}
        except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as error:
            parsed.failures.append(f"TOOL_CALL line: {type(error).__name__}: {safe_text(line, 200)}")
            continue
        if len(parsed.calls) < MAX_CALLS:
            parsed.calls.append(ToolCall(tool_name=shape.group("name"), arguments=arguments))
    prose.append(text[last:])
    parsed.text = "".join(prose).strip()
    return parsed


Parser = Callable[[str], ParsedAnswer]
