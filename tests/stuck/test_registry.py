"""The detector registry: one name -> class mapping that validates, lists and builds, for every entry point."""

import re

import pytest

from evals.stuck_bench import BenchSettings, BenchSettingsError
from tests.stuck.conftest import TOOLS
from tool_selection.collaboration import CollaborationConfigError, load_collaboration_config
from tool_selection.selector import check_decision
from tool_selection.stuck import (
    DETECTORS,
    Attempt,
    CombinedDetector,
    ConsistencyDetector,
    DetectorConfigError,
    DetectorOptions,
    HeuristicDetector,
    StuckDetector,
    check_detector_names,
    detector_names,
    make_detector,
    register_detector,
)

KNOWN = "heuristic, validation, confidence, confidence_min, consistency, combined, learned"
PAIR = {"primary": "local:qwen2.5-coder-0.5b", "secondary": "local:qwen2.5-coder-1.5b"}


class Constant(StuckDetector):
    """A third-party detector: scores every decision ``level``."""

    name = "constant"

    def __init__(self, level: float = 0.25):
        self.level = level

    def detect(self, attempt):
        return self._signal(self.level)


@pytest.fixture
def constant():
    register_detector(Constant)
    yield Constant
    DETECTORS.unregister(Constant.name)


def test_the_registry_maps_each_name_to_its_class_in_report_order():
    assert ", ".join(DETECTORS) == KNOWN
    assert all(issubclass(cls, StuckDetector) and cls.name == name for name, cls in DETECTORS.items())
    assert detector_names(composite=False) == [n for n in DETECTORS if n != "combined"]
    assert isinstance(make_detector("consistency"), ConsistencyDetector)


def test_unknown_names_are_one_error_listing_the_known_ones():
    with pytest.raises(DetectorConfigError, match=re.escape(f"Unknown stuck detector 'gut'; choose one of: {KNOWN}.")):
        make_detector("gut")
    with pytest.raises(DetectorConfigError, match=re.escape("Unknown stuck detectors 'hunch', 'confidnce' (did you "
                                                            "mean 'confidence'")):
        check_detector_names(["validation", "hunch", "confidnce"])
    with pytest.raises(DetectorConfigError, match="No stuck detector given"):
        check_detector_names([" ", ""])
    assert check_detector_names([" validation", "confidence", "validation"]) == ["validation", "confidence"]


def test_each_class_takes_its_options_from_the_shared_ones():
    options = DetectorOptions(consistency_k=5, temperature=0.9, combine="mean",
                              components=["validation", "consistency"], weights=[2, 1], heuristic={"min_words": 2})
    consistency = make_detector("consistency", options)
    assert (consistency.k, consistency.temperature) == (5, 0.9)
    assert make_detector("heuristic", options).min_words == 2
    combined = make_detector("combined", options)
    assert isinstance(combined, CombinedDetector) and combined.mode == "mean" and combined.weights == [2, 1]
    assert [c.name for c in combined.components] == ["validation", "consistency"] and combined.components[1].k == 5
    assert make_detector("combined", mode="max").mode == "max"  # CombinedDetector's own word for combine
    with pytest.raises(TypeError, match="not both"):
        make_detector("consistency", options, consistency_k=4)


def test_options_are_checked_once_for_python_the_yaml_config_and_the_benchmark():
    with pytest.raises(DetectorConfigError, match="consistency_k: Input should be greater than or equal to 2"):
        make_detector("consistency", consistency_k=1)
    with pytest.raises(CollaborationConfigError, match=r"pairs\.0\.consistency_k: Input should be greater than or eq"):
        load_collaboration_config({"collaboration": {"pairs": [{**PAIR, "consistency_k": 1}]}})
    with pytest.raises(BenchSettingsError, match="consistency_k: Input should be greater than or equal to 2"):
        BenchSettings.build(consistency_k=1)
    for bad in ({"temperature": 0.0}, {"temperature": 2.5}):
        with pytest.raises(DetectorConfigError, match="temperature"):
            make_detector("validation", **bad)
        with pytest.raises(BenchSettingsError, match="temperature"):
            BenchSettings.build(**bad)
    with pytest.raises(DetectorConfigError, match="weights needs one non-negative number per component"):
        make_detector("combined", components=["validation"], weights=[-1])
    with pytest.raises(DetectorConfigError, match="heuristic: bad heuristic options"):
        make_detector("heuristic", heuristic={"min_words": 0})


def test_a_registered_detector_works_everywhere_a_name_is_taken(constant):
    assert ", ".join(DETECTORS) == f"{KNOWN}, constant"
    decision = check_decision("Weather in Oslo: get_weather.", [], TOOLS)
    assert make_detector("constant")(Attempt(request="Weather in Oslo?", decision=decision)).score == 0.25
    combined = make_detector("combined", components=["validation", "constant"])
    assert [c.name for c in combined.components] == ["validation", "constant"]
    pair = load_collaboration_config({"collaboration": {"pairs": [{**PAIR, "detector": "constant"}]}}).pairs[0]
    assert isinstance(pair.build_detector(), Constant)
    assert BenchSettings.build(detectors="validation,constant").detectors == ["validation", "constant"]


def test_registration_refuses_a_taken_name_and_what_is_not_a_detector():
    class Impostor(HeuristicDetector):
        name = "validation"

    with pytest.raises(DetectorConfigError, match="'validation' is taken by ValidationDetector "
                                                  r"\(tool_selection.stuck.detectors\); give .*Impostor \("):
        register_detector(Impostor)
    assert register_detector(DETECTORS["heuristic"]) is HeuristicDetector  # registering the same class again is fine
    with pytest.raises(TypeError, match="StuckDetector subclass"):
        register_detector(object)

    class Nameless(StuckDetector):
        def detect(self, attempt):
            return self._signal(0.0)

    with pytest.raises(TypeError, match="needs a class attribute name"):
        register_detector(Nameless)
