"""An LM over the local engine with a scripted llama.cpp stand-in: every strategy's prompt and answer path runs
for real, only the model's text is scripted."""

import dspy
import pytest

from tests.lm.conftest import FakeLlama
from tool_selection.lm import LocalEngine
from tool_selection.lm.engine import AsyncLocalEngine


@pytest.fixture
def scripted(tmp_path):
    """``scripted(answers, llama=None)`` -> (dspy.LM, FakeLlama)."""

    def make(answers=(), *, llama=None, constrained=True):
        llama = llama or FakeLlama(answers)
        engine = LocalEngine(tmp_path / "fake.gguf", llama=llama, spec="local:fake", constrained=constrained)
        lm = dspy.LM("local:fake", engine=engine, async_engine=AsyncLocalEngine(engine), cache=False,
                     num_retries=0, temperature=0.0, max_tokens=128)
        return lm, llama

    return make
