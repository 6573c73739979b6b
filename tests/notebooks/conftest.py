from tests.evals.conftest import suite_path  # noqa: F401
