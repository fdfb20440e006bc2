"""Turn grouping and the L0 window plan (W=4, overlap 1, char cap)."""

import pytest

from memstrata.layers.windowing import group_turns, plan_windows
from memstrata.model import Message


def msgs(*roles_texts):
    return [Message(role=r, content=t) for r, t in roles_texts]


def test_user_message_opens_a_turn():
    turns = group_turns(msgs(("user", "a"), ("assistant", "b"), ("assistant", "c"),
                             ("user", "d"), ("user", "e")))
    assert [len(t.messages) for t in turns] == [3, 1, 1]
    assert [t.index for t in turns] == [1, 2, 3]


def test_leading_assistant_messages_are_kept():
    turns = group_turns(msgs(("assistant", "hello"), ("user", "hi"), ("assistant", "yo")))
    assert [t.messages[0].content for t in turns] == ["hello", "hi"]


def _turns(n, size=10):
    return group_turns(msgs(*[("user", "x" * size) for _ in range(n)]))


def test_windows_of_four_overlap_one_cover_each_turn_once():
    turns = _turns(10)
    spans = plan_windows(turns, 4, 1, 6000)
    assert [(s.start, s.stop, s.first_target) for s in spans] == [(0, 4, 0), (3, 7, 4), (6, 10, 7)]
    targets = [i for s in spans for i in s.targets()]
    assert targets == list(range(10))


def test_char_cap_shortens_window_but_keeps_one_target():
    turns = _turns(5, size=3000)  # each turn ~3010 chars
    spans = plan_windows(turns, 4, 1, 6000)
    assert all(len(s.targets()) >= 1 for s in spans)
    assert [i for s in spans for i in s.targets()] == list(range(5))
    # no window with targets exceeds the cap unless it holds a single target
    for s in spans:
        if len(s.targets()) > 1:
            assert sum(3010 for _ in range(s.start, s.stop)) <= 6000 + 100


def test_bad_window_parameters_are_refused():
    with pytest.raises(ValueError):
        plan_windows(_turns(2), 2, 2, 100)
