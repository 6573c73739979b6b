"""The scale benchmark's model-free retrieval table."""

from evals.benchmarks.scale import retrieval_table
from evals.suite import Suite, load_suite


def test_the_retrieval_table_scores_every_retriever_at_every_size_that_holds_the_cases():
    needing = [case for case in load_suite("finance").split("test").cases if case.expected_calls][:4]
    table = retrieval_table(Suite("few", needing), sizes=[1, 50], ks=[1, 5], retrievers=["bm25"])
    assert list(table["registry_tools"]) == [50]  # one tool cannot hold the cases' tools: that size is left out
    row = table.iloc[0]
    assert row["cases"] == 4 and 0 <= row["recall@1"] <= row["recall@5"] <= 1 and 0 < row["mrr"] <= 1
