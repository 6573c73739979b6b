import dspy
import pytest


@pytest.fixture(autouse=True)
def reset_dspy_settings():
    """These tests configure DSPy globally, as a user does (``dspy.configure``); undo it afterwards."""
    yield
    dspy.configure(lm=None, adapter=None)
