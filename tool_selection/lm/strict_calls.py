"""Strict tool calls for a local model: free text, but every call it opens is decoded under a grammar.

A grammar over the whole answer forces a small model's hand (it must call, or it must write prose the grammar
foresaw) and makes llama.cpp check every token of the free text against it, which is slow. Here the model writes
freely, as in its own format, until it opens a call (``<tool_call>``, the ```` ```json ```` fence small Qwen
models write instead, or a JSON object as the whole answer); the call's JSON is then decoded under a grammar that
admits only the listed functions, each with its own argument schema (declared keys only, required ones present,
types and enums kept); then the model may close the call, open another or end. Inside a fence, an object that
follows a call (several calls in one fence, as JSON lines) opens the next call, and so does an object that opens
with ``"name"`` after a bare call (an exact repeat of one ends the answer, as the parser drops it). Any other text
after a call ends the answer: a small model that does not stop after its call goes on to imagine the tool's
result, or repeats the call as prose, until ``max_tokens`` (in a tool-calling loop that text fills the context
window within a few steps). The KV cache keeps every stage's prefix, so a stage costs only its own tokens.

This is what OpenAI calls strict function calling; ``tools=`` plus a ``response_format`` schema (one call's JSON,
as ``strategies.native.call_schema`` writes it) asks the local engine for it.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from itertools import combinations
from typing import Any

from tool_selection.decision import ToolCall
from tool_selection.lm.request_values import (
    coordinated,
    digit_values,
    loosely_written,
    meanings,
    number_words,
    same_meaning,
    written_values,
)
from tool_selection.parsing import call_json, name_words, parse_native, words

__all__ = ["CLAUSE_BREAK", "COVER_RULES", "DESCRIBED_CALLS", "MORE_CALLS", "CallBudget", "OwnCalls", "UNTIL_COVERED",
           "asked_apart", "described_call", "more_calls", "new_call", "render_chat", "request_clauses",
           "request_writes", "strict_tool_completion", "uncalled", "uncovered", "unpaired"]

CALL_OPENERS = re.compile(r"(?:(?P<tag><tool_call>)|(?P<fence>```json))[ \t]*\n?$")
BARE_CALL = re.compile(r"\s*\{")  # small models often answer with the call's JSON alone
CLOSERS = re.compile(r"(?:\s|</tool_call>|```(?!j))*")  # what may close a call: its tag, its fence, white space
NEXT_CALL = ("<tool_call>", "```json", "</tool_call>", "```")  # what may follow a call, as it is being written
FORCED_OPENER = "<tool_call>\n"  # what a required call opens with (Qwen's own tag)
NAMED_CALL = '{"name"'  # after a bare call, an object that opens so is the next call (JSON lines); any other ends it
_TAIL_TOKENS = 16  # enough tokens to hold an opener however the tokenizer splits it
MORE_CALLS = "tool_selection_more_calls"
"""The key, in a request's ``metadata``, of how many calls to open for the model after its own (``more_calls``)."""
UNTIL_COVERED = "tool_selection_until_covered"
"""The key, in a request's ``metadata``, that opens another call only while the request holds a value no call
uses (``more_calls``' ``until_covered``); its value is ``COVER_RULES``."""
COVER_RULES = 6
"""The revision of the rules ``until_covered`` follows, so that answers cached under older rules are not reused
(2: a call not kept is opened once more for the functions the request names and no call uses; 3: that call is kept
only if it uses a value left unused or makes a pairing left out; 4: or if a clause of the request asks for its
function apart from the calls made, ``asked_apart``; 5: in a conversation's last user turn alone; 6: a function a
clause asks for by meaning, ``CallBudget.meant``, counts as named and asked for apart)."""
DESCRIBED_CALLS = "tool_selection_described_calls"
"""The key, in a request's ``metadata``, that opens the call for the model where its answer describes one instead of
making it (``described_call``)."""
CLOSED_CALL = "\n</tool_call>"


def render_chat(llama: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]):
    """The model's chat template (from its GGUF) rendered with ``tools``, as llama-cpp-python's chat handler
    renders it: a ``ChatFormatterResponse`` (prompt, stop strings, stopping criteria)."""
    eos, bos = llama.token_eos(), llama.token_bos()
    formatter = _formatter(llama.metadata["tokenizer.chat_template"], _piece(llama, eos), _piece(llama, bos), eos)
    return formatter(messages=messages, tools=tools)


@lru_cache(maxsize=8)
def _formatter(template: str, eos_token: str, bos_token: str, eos_id: int):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    return Jinja2ChatFormatter(template=template, eos_token=eos_token, bos_token=bos_token, stop_token_ids=[eos_id])


def _piece(llama: Any, token: int) -> str:
    return llama.detokenize([token], special=True).decode("utf-8", errors="ignore") if token != -1 else ""


@dataclass(frozen=True)
class OwnCalls:
    """How ``strict_tool_completion`` takes the model's own calls. ``required`` (``tool_choice="required"``): the
    answer opens with a call (``<tool_call>`` is written for the model). ``keep(call, calls before it)``: a call
    after the first for which it is false ends the answer and is not kept, however it was opened (``new_call``: a
    small model that loops writes the same calls again until ``max_tokens``, in a fence as well); without it, only
    a bare call outside a fence that repeats one ends the answer (the parser drops such repeats)."""

    required: bool = False
    keep: Callable[[ToolCall, list[ToolCall]], bool] | None = None


def strict_tool_completion(llama: Any, prompt: str, *, grammar: Any, max_tokens: int, stop: list[str],
                           stopping_criteria: Callable | None = None, rules: OwnCalls = OwnCalls(),
                           **options: Any) -> dict[str, Any]:
    """Complete ``prompt`` (the chat template's rendering) with every call opened decoded under ``grammar``, the
    model's own calls taken by ``rules``.

    Returns llama-cpp-python's completion shape (``choices[0]["text"]``, ``finish_reason``, ``usage``) for the
    whole answer. ``max_tokens`` bounds the answer, all stages together; ``stop`` ends it as usual.
    """
    from llama_cpp import StoppingCriteriaList

    text, produced, prompt_tokens, finish = "", 0, None, "stop"
    in_fence = False  # the last call was written inside a fence, so an object next to it is the next call
    called = bare = False  # a call was written; the last one was a bare object
    bare_calls: list[ToolCall] = []  # bare calls written outside a fence, as the parser reads them: a repeat ends the answer
    made: list[ToolCall] = []  # with ``rules.keep``: every call so far
    if rules.required:
        text, produced, prompt_tokens, finish = _forced_call(llama, prompt, grammar, max_tokens, options)
        called, made = True, parse_native(text).calls
    while produced < max_tokens and finish != "length":
        tokens = _tokens(llama, prompt + text)
        opener = _CallOpener(llama, start=len(tokens), bare_opens=in_fence or not text.strip(), after_call=called,
                             named_opens=bare and not in_fence, also=stopping_criteria)
        free = llama.create_completion(tokens, max_tokens=max_tokens - produced, stop=stop,
                                       stopping_criteria=StoppingCriteriaList([opener]), **options)
        prompt_tokens = prompt_tokens if prompt_tokens is not None else free["usage"]["prompt_tokens"]
        written, spent, finish = _stage(free)
        if opener.kind == "bare":  # give the brace back: the grammar writes the object from its start
            written, spent = written[:written.index("{")], spent - 1
            _forget_last_scored_token(llama)
        elif opener.kind in ("end", "named") and written.startswith(opener.kept):  # past the calls, or the brace
            written, spent = opener.kept, spent - opener.dropped
            for _ in range(opener.dropped):
                _forget_last_scored_token(llama)
        text, produced = text + written, produced + spent
        if opener.kind in (None, "end") or finish == "length" or produced >= max_tokens:
            break
        called, bare = True, opener.kind in ("bare", "named")
        in_fence = opener.kind == "fence" or (opener.kind == "bare" and in_fence)
        written, spent, finish = _stage(llama.create_completion(
            _tokens(llama, prompt + text), max_tokens=max_tokens - produced, grammar=grammar, **options))
        if finish != "length" and (rules.keep or (bare and not in_fence)):
            calls, before = parse_native(written).calls, made if rules.keep else bare_calls
            if calls and before and not (rules.keep or new_call)(calls[0], before):
                for _ in range(spent + 1):  # the call and the end of its grammar are not kept
                    _forget_last_scored_token(llama)
                text = _ended(text)
                break
            bare_calls += calls if bare and not in_fence else []
            made += calls
        text, produced = text + written, produced + spent
        if finish == "length":
            break
        _forget_last_scored_token(llama)  # the end-of-sequence token that closed the grammar, not the answer
    else:
        finish = "length"
    return {"choices": [{"text": text, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens or 0, "completion_tokens": produced,
                      "total_tokens": (prompt_tokens or 0) + produced}}


@dataclass(frozen=True)
class CallBudget:
    """How many calls ``more_calls`` may open after the model's own, and whether only while the request holds a
    value no call uses or names a function none calls."""

    count: int
    until_covered: bool = False
    functions: tuple[str, ...] = ()  # the listed functions, for ``uncalled`` and ``described_call``
    descriptions: Mapping[str, str] = field(default_factory=dict)  # each function's, for ``asked_apart``
    required: Mapping[str, frozenset[str]] = field(default_factory=dict)  # each function's required arguments
    described: bool = False  # an answer that describes a call (``described_call``) gets it opened
    narrowed: Callable[[Sequence[str]], Any] | None = None  # the grammar of the calls to some functions alone
    meant: Callable[[str, list[ToolCall]], list[str]] | None = None  # functions a clause asks for by meaning


def more_calls(llama: Any, prompt: str, completion: dict[str, Any], *, grammar: Any, budget: CallBudget,
               request: str, max_tokens: int, options: dict[str, Any]) -> dict[str, Any]:
    """``completion`` (``strict_tool_completion``'s, for ``prompt``) with up to ``budget.count`` more calls opened for
    the model after its own, in the form of its last one (tag or fence), each decoded under ``grammar``: small
    models answer a request that asks for several things with its first call and end. The first call that repeats
    one already made in other words (the same function, and no value the earlier calls lack: their values swapped,
    reordered or a flag flipped), or fills an argument with a value ``request`` does not spell out (a model with
    nothing left to call repeats itself or makes values up), ends the answer and is not kept. An answer without a
    call, or cut at its token limit, is left as it is. ``budget.until_covered``: another call is opened only while
    ``request`` writes a value the calls leave unused (``uncovered``: a number, a capitalised name or a listed item
    no call holds, or one written more often than the calls hold it) or names what one of ``budget.functions`` no
    call uses does (``uncalled``), so a request the calls cover costs nothing more; the call is kept only if it
    uses one of those values (a value written twice may come back in a pairing already made: the way back), or
    does something new with one of those functions or an earlier call's function (``_answers``). A call that is not
    kept while the request names functions no call uses is opened once more under ``budget.narrowed(those names)``,
    a grammar that admits only them (a small model asked for another call writes the function it just called
    again), and kept only if it uses a value left unused or makes a pairing left out, or if it calls a function a
    clause of the request asks for apart from the calls made (``asked_apart``), its required arguments written in the
    request (its optional ones that are not are dropped): the model did not choose it, and a word of a function's
    name in the request ("the average grade" for ``highest_grade``) is weak evidence alone. A function a clause asks
    for by meaning (``budget.meant``: "then show me what I still have booked" for ``list_my_bookings``,
    ``tool_selection.lm.clause_meaning``) counts as named and as asked for apart.
    ``max_tokens`` bounds the whole answer; ``options``: the other generation settings."""
    choice, usage = completion["choices"][0], completion["usage"]
    text, produced = choice["text"], usage["completion_tokens"]
    calls = parse_native(text).calls
    opener, closer = _call_form(text)
    for _ in range(budget.count if calls and choice["finish_reason"] != "length" else 0):
        left = uncovered(request, calls) if budget.until_covered else []
        named = uncalled(request, calls, budget.functions) if budget.until_covered else []
        meant = budget.meant(request, calls) if budget.until_covered and budget.meant else []
        named += [name for name in meant if name not in named]
        pairs = unpaired(request, calls) if budget.until_covered else []
        if budget.until_covered and not left and not named and not pairs:
            break
        opened = _closed_calls(text) + "\n"
        keep = partial(_keeps, request=request, calls=list(calls), covering=(left, named, pairs)
                       if budget.until_covered else None)
        kept = _kept_call(llama, prompt + opened, grammar, max_tokens - produced, options, opener=opener, keep=keep)
        if kept is None and named and budget.narrowed:
            asked = asked_apart(request, calls, named, budget.descriptions)
            asked += [name for name in meant if name not in asked]
            keep = partial(_keeps_named, request=request, calls=list(calls), covering=(left, [], pairs),
                           asked=asked, required=budget.required)
            kept = _called_by_name(llama, prompt + opened, budget.narrowed, (named, asked), max_tokens - produced,
                                   options, opener=opener, keep=keep)
        if kept is None:
            break
        written, spent, call = kept
        text, produced = opened + written + closer, produced + spent
        calls.append(call)
    return {"choices": [{"text": text, "finish_reason": choice["finish_reason"]}],
            "usage": {**usage, "completion_tokens": produced,
                      "total_tokens": usage["prompt_tokens"] + produced}}


def described_call(text: str, functions: Sequence[str]) -> bool:
    """Whether ``text``, an answer without a call, describes a call instead of making it: it names one of the listed
    ``functions`` as written (quoted, in backticks, or a name that holds ``_`` or ``.``: "call the
    `get_prime_factors` function with ...", "math.gcd(36, 48)"), or it has no words outside its markup (an empty
    ``<tools></tools>``). An answer that declines ("None of the available functions can do this.") names none."""
    if not re.search(r"[^\W\d_]{2}", re.sub(r"<[^>]*>", " ", text)):
        return True
    for name in functions:
        for found in re.finditer(rf"(?<![\w.]){re.escape(name)}(?!\w)", text):
            if "_" in name or "." in name or text[found.start() - 1:found.start()] in ("`", '"', "'"):
                return True
    return False


def new_call(call: ToolCall, calls: list[ToolCall]) -> bool:
    """``OwnCalls.keep`` for the cover strategy: a call that repeats one already made is not kept, and ends the
    answer."""
    return call not in calls


def _answers(call: ToolCall, request: str, calls: list[ToolCall], left: list[str], named: list[str],
             pairs: Sequence[str] = ()) -> bool:
    """Whether ``call`` does something the calls before it left undone: uses a value ``left`` holds (a value written
    twice may come back in another pairing: the way back of "from A to B and back"), makes a pairing ``pairs`` holds
    (``unpaired``), or does something new (``_adds_to``) with a function ``named`` holds or an earlier call's
    function."""
    if len(uncovered(request, [*calls, call])) < len(left):
        return not any(_by_argument(call) == _by_argument(earlier) for earlier in calls
                       if earlier.tool_name == call.tool_name)
    if pairs and len(unpaired(request, [*calls, call])) < len(pairs):
        return True
    return _adds_to(calls, call) and (call.tool_name in named or call.tool_name in {c.tool_name for c in calls})


def uncalled(request: str, calls: list[ToolCall], functions: Sequence[str]) -> list[str]:
    """The ``functions`` no call uses whose name holds a word of ``request`` (by its stem; two words written together
    count as one too: "check out" for ``checkout``) that no called function's name holds, generic verbs aside:
    ``kinematics.distance_traveled`` for "... Also, compute the total distance" after ``kinematics.final_velocity``."""
    called = {call.tool_name for call in calls}
    said = _said(request)
    taken = {stem for name in called for stem in _name_stems(name)}
    return [name for name in functions if name not in called and (_name_stems(name) - taken - _GENERIC) & said]


CLAUSE_BREAK = re.compile(r"[.?!;:](?:\s+|$)|\n|\b(?:and then|then|also|after that|afterwards|as well|plus|next|"
                          r"finally|first|second|third|lastly|later|besides|additionally)\b", re.IGNORECASE)
"""Where a request moves to its next clause: a sentence's end, a line, a word that says what comes next."""
LAST_USER_TURN = "\nuser: "  # how a conversation written as one request (``Case.prompt``) opens a user turn


def request_clauses(request: str) -> list[str]:
    """The clauses of ``request`` (``CLAUSE_BREAK``), not blank; a request written as a conversation ("user: Dig
    here.\nassistant: ...\nuser: Open it") in its last user turn alone (what earlier turns asked for is done)."""
    return [clause for clause in CLAUSE_BREAK.split(request.rsplit(LAST_USER_TURN, 1)[-1]) if clause.strip()]


def asked_apart(request: str, calls: list[ToolCall], named: Sequence[str],
                descriptions: Mapping[str, str]) -> list[str]:
    """The functions of ``named`` (``uncalled``'s) that a clause of ``request`` asks for apart from ``calls``: the
    clause (``CLAUSE_BREAK``) holds a word of the function's name that neither the called functions' names nor their
    ``descriptions`` hold, and no word of a called function's name ("Add P2006 to my cart and then check out" asks for
    ``checkout`` apart from ``add_to_cart``; "Any words with the same meaning?" does not ask for ``count_words``
    apart from ``find_synonyms``, whose description says "words"). A request of one clause asks for none; a request
    written as a conversation ("user: Dig here.\nassistant: ...\nuser: Open it") asks in its last user turn alone
    (what earlier turns asked for is done)."""
    clauses = [_said(clause) for clause in request_clauses(request)]
    if len(clauses) < 2:
        return []
    taken = {stem for call in calls for stem in _name_stems(call.tool_name)}
    told = taken | {stem for call in calls for stem in _stems(descriptions.get(call.tool_name, "")).split()}
    return [name for name in named
            if any((said := (_name_stems(name) - taken - _GENERIC) & clause) and not said & told
                   and not (taken - _GENERIC) & clause for clause in clauses)]


def _called_by_name(llama: Any, prompt: str, narrowed: Callable[[Sequence[str]], Any],
                    names: tuple[Sequence[str], Sequence[str]], max_tokens: int, options: dict[str, Any], *,
                    opener: str, keep: Callable[[ToolCall], ToolCall | None]) -> tuple[str, int, ToolCall] | None:
    """``_kept_call`` under the grammar of the functions ``names[0]`` holds (the request's words name them), then,
    where ``keep`` refuses that call, under the grammar of the fewer that ``names[1]`` holds (asked for apart)."""
    named, asked = names
    for only in (named, asked) if asked and set(asked) < set(named) else (named,):
        grammar = narrowed(only)
        if grammar is not None and (kept := _kept_call(llama, prompt, grammar, max_tokens, options, opener=opener,
                                                       keep=keep)) is not None:
            return kept
    return None


def _said(text: str) -> set[str]:
    """``text``'s word stems, and each two written together ("check out" says "checkout" too)."""
    spoken = _stems(text).split()
    return {*spoken, *map(str.__add__, spoken, spoken[1:])}


def _name_stems(name: str) -> set[str]:
    return {stem for stem in _stems(name_words(name)).split() if len(stem) > 2}


_GENERIC = frozenset({  # stems of the verbs and nouns many catalogs' names share, not what a request asks for
    "get", "calcul", "comput", "find", "search", "fetch", "retriev", "list", "info", "inform", "detail", "data",
    "creat", "updat", "check", "lookup", "queri", "set", "make", "add", "show", "api", "tool", "function"})


def _call_form(text: str) -> tuple[str, str]:
    """How the answer's last call opened and closes: Qwen's tag, the JSON fence small models write instead, or
    nothing (a bare object as the whole answer: the next one follows on its own line, as JSON lines)."""
    fence, tag = text.rfind("```json"), text.rfind("<tool_call>")
    if fence == tag == -1:
        return "", ""
    return ("```json\n", "\n```") if fence > tag else (FORCED_OPENER, CLOSED_CALL)


def _grounded(call: ToolCall, request: str, calls: list[ToolCall]) -> bool:
    """Whether every string and number among ``call``'s arguments is written in ``request`` (as a word sequence,
    case, punctuation and word endings aside, or as a value: 0.07 for 7%, 2022-04-05 for April 5, 2022) or used by
    one of ``calls``, the calls already made (a default the model filled in for the first call, such as level
    "user", may stand in the next one too)."""
    spelled = f" {words(request)}" + _held(calls)
    stemmed = f" {_stems(spelled)} "
    known = [meaning for _, means in written_values(request) for meaning in means] + digit_values(request)
    known += _held_meanings(calls)
    return all(f" {words(value)} " in spelled or f" {_stems(value)} " in stemmed
               or same_meaning(meanings(value), known) for value in _argument_values(call.arguments))


def request_writes(value: str | int | float, request: str) -> bool:
    """Whether ``request`` gives ``value``: as a forced call's values are read (its words, their stems, or what it
    means), as a number written in words ("three days"), or loosely (``request_values.loosely_written``: "cm" after
    "5cm", "mi" for "miles", "UK" for "United Kingdom")."""
    return (_grounded(ToolCall(tool_name="value", arguments={"value": value}), request, [])
            or same_meaning(meanings(str(value)), number_words(request)) or loosely_written(str(value), request))


def _stems(text: str) -> str:
    """``text``'s words as their English stems (Snowball): "vaporization" where the request wrote "vaporizing"."""
    return " ".join(_stemmer().stemWords(words(text).split()))


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def _held(calls: list[ToolCall]) -> str:
    """Every string and number among ``calls``' arguments as words, each between spaces (`` a b c ``)."""
    return " " + " ".join(words(value) for call in calls for value in _argument_values(call.arguments)) + " "


def _held_meanings(calls: list[ToolCall]) -> list:
    return [meaning for call in calls for value in _argument_values(call.arguments) for meaning in meanings(value)]


def uncovered(request: str, calls: list[ToolCall]) -> list[str]:
    """What ``request`` writes that ``calls`` leave unused, once for each time it is missing: the dates, numbers and
    capitalised names (not a sentence's first word) written more often than the strings and numbers among
    ``calls``' arguments hold them (as a word sequence, case and punctuation aside, or as a value: 3,000 as 3000, 7%
    as 7 or 0.07, 1.2 billion as 1.2e9, April 5, 2022 as 2022-04-05), so that "from A to B, then B to C" after one
    call still holds a B; then the items the request lists beside a value a call holds that no call holds ("gold,
    silver and palladium" after a call for gold). Quoted values are not read: on BFCL's own answers they leave more
    requests looking unfinished after every expected call than they help find."""
    values = [value for call in calls for value in _argument_values(call.arguments)]
    spelled = [f" {words(value)} " for value in values]  # each value read once, as words and as what it means
    meant = [meanings(value) for value in values]
    written = Counter(written_values(request))
    left = []
    for (text, means), count in written.items():
        holding = sum(1 for spelling, meaning in zip(spelled, meant, strict=True)
                      if f" {words(text)} " in spelling or same_meaning(means, meaning))
        left += [text] * (count - holding) if words(text) else []
    held = " " + " ".join(spelling.strip() for spelling in spelled) + " "  # as ``_held`` writes it
    held_meanings = [meaning for means in meant for meaning in means]
    named = {words(text) for text, _ in written}
    return left + [item for item in coordinated(request, values) if words(item) not in named
                   and f" {words(item)} " not in held and not same_meaning(meanings(item), held_meanings)]


RESPECTIVELY = re.compile(r"\brespective(?:ly)?\b", re.IGNORECASE)


def unpaired(request: str, calls: list[ToolCall]) -> list[str]:
    """The pairings the calls of one function leave out where they pair the items of two lists ``request`` writes:
    calls for Lakers 2018, Bulls 2020 and Lakers 2020 after "the Lakers and Bulls in 2018 and 2020" leave out Bulls
    2018 (each pairing once, as "function: argument=value, argument=value"). Two arguments count where each holds
    two or more values across the calls and the request lists those values together ("X and Y", "X, Y or Z",
    ``coordinated``); a request that pairs its lists itself ("... respectively") leaves none out."""
    if RESPECTIVELY.search(request):
        return []
    by_function: dict[str, list[dict[str, str]]] = defaultdict(list)
    for call in calls:  # each argument that holds one string or number, as written
        by_function[call.tool_name].append({argument: values[0] for argument, value in call.arguments.items()
                                            if len(values := _argument_values(value)) == 1})
    missing = []
    for name, held in by_function.items():
        lists, beside = {}, {}  # per argument: its values the request lists together; the items listed beside them
        for argument in dict.fromkeys(key for pairing in held for key in pairing):
            spelled = {words(pairing[argument]): pairing[argument] for pairing in held if argument in pairing}
            listed = {value: {words(item) for item in coordinated(request, [text])} for value, text in spelled.items()}
            if len(spelled) > 1 and all(set(spelled) - {value} <= items for value, items in listed.items()):
                lists[argument], beside[argument] = sorted(spelled), set().union(*listed.values())
        for first, second in combinations(lists, 2):
            if set(lists[first]) & set(lists[second]) or set(lists[second]) & beside[first]:
                continue  # one list, not two ("sides 3 and 4, and 5 and 12"; "from A to B and from B to A")
            made = {(words(pairing[first]), words(pairing[second])) for pairing in held
                    if first in pairing and second in pairing}
            missing += [f"{name}: {first}={x}, {second}={y}" for x in lists[first] for y in lists[second]
                        if (x, y) not in made]
    return missing


def _adds_to(calls: list[ToolCall], call: ToolCall) -> bool:
    """Whether ``call`` does something ``calls`` do not: another function, a string or number none of them holds
    (booleans aside: a flipped flag asks for nothing the request wrote), or a new pairing of values the earlier calls
    of its function hold, each under the argument that held it (Lakers 2020 after Lakers 2018 and Bulls 2020; not
    two values swapped between arguments)."""
    same = [earlier for earlier in calls if earlier.tool_name == call.tool_name]
    if not same:
        return True
    held = {words(value) for earlier in calls for value in _argument_values(earlier.arguments)}
    if any(words(value) not in held for value in _argument_values(call.arguments)):
        return True
    pairing = _by_argument(call)
    held_under = {(name, value) for earlier in same for name, value in _by_argument(earlier).items()}
    return set(pairing.items()) <= held_under and all(
        any(name in other and other[name] != value for name, value in pairing.items())
        for other in map(_by_argument, same))


def _by_argument(call: ToolCall) -> dict[str, tuple[str, ...]]:
    """``call``'s arguments that hold strings or numbers, each as its values' words in any order."""
    return {name: tuple(sorted(words(text) for text in values)) for name, value in call.arguments.items()
            if (values := _argument_values(value))}


def _argument_values(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for item in value.values() for text in _argument_values(item)]
    if isinstance(value, list):
        return [text for item in value for text in _argument_values(item)]
    if isinstance(value, float) and value.is_integer():
        return [str(int(value))]
    return [str(value)] if isinstance(value, str | int | float) and not isinstance(value, bool) else []


def _ended(text: str) -> str:
    """``text`` ended where a call that is not kept would start: the opener it ends with (a tag or fence) dropped,
    and a call it leaves open closed."""
    if opener := CALL_OPENERS.search(text.rstrip()):
        text = text.rstrip()[:opener.start()]
    closed = _closed_calls(text)
    return closed if closed != text.rstrip() else text


def _closed_calls(text: str) -> str:
    """``text`` with a call it left open (a tag or fence its grammar stage ended in) closed."""
    text = text.rstrip()
    if text.count("<tool_call>") > text.count("</tool_call>"):
        text += CLOSED_CALL
    elif text.count("```") % 2:
        text += "\n```"
    return text


def _keeps(call: ToolCall, *, request: str, calls: list[ToolCall],
           covering: tuple[list[str], list[str], list[str]] | None) -> ToolCall | None:
    """``call`` where ``more_calls`` keeps it after ``calls`` (else None): grounded in ``request`` and, with the
    values, functions and pairings the calls left (``covering``), doing one of those (``_answers``), else adding
    something new."""
    keeps = _grounded(call, request, calls) and (_answers(call, request, calls, *covering) if covering is not None
                                                 else _adds_to(calls, call))
    return call if keeps else None


def _keeps_named(call: ToolCall, *, request: str, calls: list[ToolCall], covering: tuple[list[str], list[str],
                 list[str]], asked: Sequence[str], required: Mapping[str, frozenset[str]]) -> ToolCall | None:
    """What ``more_calls`` keeps of a call opened under the grammar of the functions the request names: the call, as
    ``_keeps`` keeps it; else, for a function a clause asks for apart (``asked``), the call without its optional
    arguments that neither ``request`` nor ``calls`` hold, if its required ones (``required``) are grounded and it
    adds something new (a made-up default such as ``detail="general information"`` is the model filling a slot)."""
    if (kept := _keeps(call, request=request, calls=calls, covering=covering)) is not None:
        return kept
    if call.tool_name not in asked:
        return None
    grounded = {name: _grounded(ToolCall(tool_name=call.tool_name, arguments={name: value}), request, calls)
                for name, value in call.arguments.items()}
    if not all(grounded[name] for name in required.get(call.tool_name, ()) if name in grounded):
        return None
    trimmed = call.model_copy(update={"arguments": {name: value for name, value in call.arguments.items()
                                                    if grounded[name]}})
    return trimmed if _adds_to(calls, trimmed) else None


def _kept_call(llama: Any, prompt: str, grammar: Any, max_tokens: int, options: dict[str, Any], *, opener: str,
               keep: Callable[[ToolCall], ToolCall | None]) -> tuple[str, int, ToolCall] | None:
    """A call opened for the model under ``grammar`` (``_forced_call``) and what it wrote and spent, or None where
    it ran out of tokens, wrote no call, or ``keep`` refuses its call (its tokens are then not scored). Where
    ``keep`` keeps less of the call (arguments dropped), the call is written as it is kept."""
    written, spent, _, finish = _forced_call(llama, prompt, grammar, max_tokens, options, opener=opener)
    new = parse_native(written).calls
    if finish == "length" or not new or (kept := keep(new[0])) is None:
        for _ in range(spent):
            _forget_last_scored_token(llama)
        return None
    if kept != new[0]:
        written = opener + call_json(kept)
    return written, spent, kept


def _forced_call(llama: Any, prompt: str, grammar: Any, max_tokens: int, options: dict[str, Any], *,
                 opener: str = FORCED_OPENER) -> tuple[str, int, int, str]:
    """A call opened for the model and written under ``grammar``: (text, tokens, prompt tokens, finish)."""
    first = llama.create_completion(_tokens(llama, prompt + opener), max_tokens=max_tokens, grammar=grammar,
                                    **options)
    written, produced, finish = _stage(first)
    if finish != "length":
        _forget_last_scored_token(llama)  # the end-of-sequence token that closed the grammar
    return opener + written, produced, first["usage"]["prompt_tokens"], finish


class _CallOpener:
    """Stopping criterion of a free stage: a call opens (a tag or fence; a bare JSON object first thing, where
    ``bare_opens``: the answer's start, or next to a call in a fence; an object opening with ``"name"``, where
    ``named_opens``: after a bare call), or, ``after_call``, the model writes something other than the next call
    (``kind`` "end"; only the call's closers are kept)."""

    def __init__(self, llama: Any, *, start: int, bare_opens: bool, after_call: bool = False,
                 named_opens: bool = False, also: Callable | None = None):
        self.llama, self.start, self.bare_opens, self.also = llama, start, bare_opens, also
        self.after_call, self.named_opens = after_call, named_opens
        self.kind: str | None = None
        self.kept, self.dropped = "", 0  # kinds "end", "named": the stage's text that is kept; tokens that are not

    def __call__(self, ids, logits) -> bool:
        if opener := CALL_OPENERS.search(_text(self.llama, ids[-_TAIL_TOKENS:])):
            self.kind = "tag" if opener["tag"] else "fence"
        elif (self.bare_opens and len(ids) - self.start <= _TAIL_TOKENS
              and BARE_CALL.match(_text(self.llama, ids[self.start:]))):
            self.kind = "bare"
        elif self.after_call:
            self.kind = self._past_the_calls(ids)
        return self.kind is not None or bool(self.also and self.also(ids, logits))

    def _past_the_calls(self, ids) -> str | None:
        """"named" where the next bare call opens, "end" where this stage has written something other than the
        next call, else None; for either, the text before it is kept (the call's closers)."""
        written = _text(self.llama, ids[self.start:])
        closed = CLOSERS.match(written).end()
        rest = written[closed:]
        head = re.sub(r"^\{\s*(?:\{\s*)?", "{", rest) if self.named_opens else ""
        if head.startswith(NAMED_CALL):
            kind = "named"
        elif (any(rest.startswith(piece) or piece.startswith(rest) for piece in NEXT_CALL)
              or (head and NAMED_CALL.startswith(head))):
            return None
        else:
            kind = "end"
        self.dropped = 1
        while self.dropped < len(ids) - self.start and len(_text(self.llama, ids[self.start:-self.dropped])) > closed:
            self.dropped += 1
        self.kept = _text(self.llama, ids[self.start:len(ids) - self.dropped])
        return kind


def _forget_last_scored_token(llama: Any) -> None:
    """Drop a token the answer does not keep from the log-probabilities being recorded (``TracingLlama``)."""
    trace = getattr(llama, "trace", None)
    if trace is not None and trace.tokens:
        trace.tokens.pop()


def _text(llama: Any, ids) -> str:
    return llama.detokenize(list(ids), special=True).decode("utf-8", errors="ignore")


def _tokens(llama: Any, text: str) -> list[int]:
    return llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)  # as the chat handler tokenizes


def _stage(completion: dict[str, Any]) -> tuple[str, int, str]:
    """What one stage wrote, how many tokens it spent, and whether it ran out of them."""
    choice = completion["choices"][0]
    return (choice["text"], completion["usage"]["completion_tokens"],
            "length" if choice.get("finish_reason") == "length" else "stop")
