import shutil
from pathlib import Path

import pytest

KEPT = Path(__file__).parents[3] / "results" / "strategies" / "qwen2.5-coder-0.5b"


@pytest.fixture
def strategy_runs(tmp_path) -> Path:
    """Two kept runs (treasure_hunt, native and native-strict) in the MODEL/STRATEGY/SUITE layout."""
    root = tmp_path / "strategies"
    for strategy in ("native", "native-strict"):
        shutil.copytree(KEPT / strategy / "treasure_hunt", root / "qwen2.5-coder-0.5b" / strategy / "treasure_hunt")
    return root
