import dspy
import pytest


@pytest.fixture(autouse=True)
def reset_dspy_settings():
    """Each test starts with DSPy unconfigured, as DSPy's own test suite does."""
    with dspy.context(lm=None, adapter=None):
        yield
