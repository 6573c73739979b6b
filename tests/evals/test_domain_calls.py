from evals.benchmarks.domain_calls import domain_calls


def test_the_demonstration_pool_follows_the_same_test_cases_and_is_train_only():
    cases, with_pool = domain_calls(), domain_calls(train=True)
    assert with_pool[:len(cases)] == cases and all(case["split"] == "test" for case in cases)
    pool = with_pool[len(cases):]
    assert pool and all(case["split"] == "train" for case in pool)
    assert sum({"multi", "parallel"} & set(case["tags"]) != set() for case in cases) == 106
