"""L3 is verbatim wherever it is shown: resolved dates help the answer step only."""

from __future__ import annotations

from datetime import datetime

from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.evidence.trace import Trace
from memstrata.evidence.lines import raw_lines
from memstrata.model import Layer, Message, Turn

SAID = "My knee hurt after the long run yesterday, should I worry?"


def test_raw_line_keeps_the_words_said_and_resolves_dates_for_the_answer():
    turn = Turn(index=3, messages=[Message(role="user", content=SAID, source_id="m#3")])
    (line,) = raw_lines("s", datetime(2024, 4, 10, 18, 40), [turn], ("User", "Assistant"))
    assert line.layer == Layer.L3
    assert "(2024-04-09)" in line.text  # what the date answer reads
    assert line.shown == SAID  # what people see


def test_source_line_of_a_raw_sentence_is_verbatim():
    turn = Turn(index=3, messages=[Message(role="user", content=SAID, source_id="m#3")])
    (line,) = raw_lines("s", datetime(2024, 4, 10, 18, 40), [turn], ("User", "Assistant"))
    # A test double stands in for the memory: a line with source ids needs no read.
    controller = Controller(object(), ControllerSettings(policy="rules"))  # type: ignore[arg-type]
    ref = controller._source(None, line, Trace())  # type: ignore[arg-type]
    assert ref.layer == Layer.L3
    assert ref.text == f"User: {SAID}"
