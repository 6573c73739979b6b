import pytest

from tests.retrieval.conftest import FUNCTIONS, function
from tool_selection.interop import from_openai
from tool_selection.retrieval import content_hash, name_words, tool_document, tool_documents


@pytest.mark.parametrize(("name", "words"), [
    ("get_price_history", "get price history"),
    ("sendEmailMessage", "send email message"),
    ("getHTTPResponse", "get http response"),
    ("math.factorial", "math factorial"),
    ("requests-get_v2", "requests get v 2"),
    ("ChaFod", "cha fod"),
])
def test_name_words_splits_snake_camel_and_dotted_names(name, words):
    assert name_words(name) == words


def test_tool_document_holds_name_words_description_and_arguments(small_registry):
    document = tool_document(small_registry.get("sendEmailMessage"))
    assert document.splitlines() == [
        "sendEmailMessage (send email message): Deliver a message to a recipient's mailbox.",
        "to: Recipient address.",
        "subject: Subject line.",
        "body: Message body.",
    ]


def test_tool_document_lists_enum_values():
    spec = function("set_case", "Change the letter case.", text="The text.")
    spec["parameters"]["properties"]["case"] = {"type": "string", "enum": ["upper", "lower"], "description": "Case."}
    document = tool_document(from_openai([spec]).get("set_case"))
    assert document.splitlines()[-1] == "case: Case. (one of upper, lower)"


def test_tool_documents_follow_the_registry_order(small_registry):
    assert list(tool_documents(small_registry)) == small_registry.names()


def test_content_hash_is_stable_and_sees_every_change(small_registry):
    documents = tool_documents(small_registry)
    assert content_hash(documents) == content_hash(tool_documents(from_openai(FUNCTIONS)))
    edited = [dict(f) for f in FUNCTIONS]
    edited[0]["description"] = "Weather for a city."
    assert content_hash(tool_documents(from_openai(edited))) != content_hash(documents)


def test_example_requests_are_appended_once_each_and_at_most_eight(small_registry):
    examples = ["Is it sunny  in Rome?", "Is it sunny in Rome?", *(f"Weather in city {i}?" for i in range(10))]
    document = tool_document(small_registry.get("get_weather"), examples)
    assert document.splitlines()[-1] == ("example requests: Is it sunny in Rome? | " +
                                         " | ".join(f"Weather in city {i}?" for i in range(7)))


def test_examples_change_only_their_tools_documents_and_the_hash(small_registry):
    plain = tool_documents(small_registry)
    with_examples = tool_documents(small_registry, {"get_weather": ["Is it sunny?"], "not_a_tool": ["ignored"]})
    assert [name for name in plain if plain[name] != with_examples[name]] == ["get_weather"]
    assert content_hash(with_examples) != content_hash(plain)
