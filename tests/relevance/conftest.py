from tests.lm.conftest import fresh_cache, make_lm  # noqa: F401  (the scripted local-engine LM fixtures)
