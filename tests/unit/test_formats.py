"""Input readers: LoCoMo, LongMemEval and JSONL; bad records are named and skipped."""

import json

import pytest

from memstrata.ingest.formats import FormatError, detect_format, read_file

LOCOMO = [{
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy yesterday."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Congrats! What breed?",
             "blip_caption": "a photo of a small dog"},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "A beagle named Max."},
        ],
        "session_2_date_time": "10:00 am on 20 May, 2023",
        "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "How is Max?"}],
    },
    "qa": [],
}]


def test_locomo_sessions_turns_and_dia_ids(tmp_path):
    p = tmp_path / "l.json"
    p.write_text(json.dumps(LOCOMO))
    parsed = read_file(p, tenant_id="acme")
    assert parsed.format == "locomo" and not parsed.issues
    s1, s2 = parsed.sessions
    assert s1.meta.scope.tenant_id == "acme" and s1.meta.scope.user_id == "conv-x"
    assert s1.session_id == "session_1" and s1.meta.session_date.day == 8
    assert [t.source_ids for t in s1.turns] == [["D1:1", "D1:2"], ["D1:3"]]
    assert "small dog" in s1.turns[0].messages[1].content
    assert s1.turns[0].messages[0].role == "user" and s1.turns[0].messages[1].speaker == "Bob"
    # a session opening with speaker_b still keeps the message
    assert s2.turns[0].messages[0].role == "assistant"


def test_locomo_bad_message_is_reported_and_rest_kept(tmp_path):
    bad = json.loads(json.dumps(LOCOMO))
    bad[0]["conversation"]["session_1"][1]["text"] = 42
    p = tmp_path / "l.json"
    p.write_text(json.dumps(bad))
    parsed = read_file(p, "locomo")
    assert len(parsed.issues) == 1
    assert parsed.issues[0].field == "text" and "session_1[1]" in parsed.issues[0].where
    assert parsed.turns == 3  # two left in session 1, one in session 2


def test_longmemeval(tmp_path):
    rec = {"question_id": "q1", "question_type": "single-session-user", "question": "?",
           "answer": "x", "question_date": "2023/05/30 (Tue) 10:00",
           "haystack_session_ids": ["s_a", "s_b"],
           "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 09:00"],
           "haystack_sessions": [
               [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
               [{"role": "robot", "content": "x"}, {"role": "user", "content": "ok"}]],
           "answer_session_ids": ["s_a"]}
    p = tmp_path / "m.json"
    p.write_text(json.dumps([rec]))
    parsed = read_file(p)
    assert parsed.format == "longmemeval"
    assert [s.session_id for s in parsed.sessions] == ["s_a", "s_b"]
    assert parsed.sessions[0].meta.session_date.strftime("%Y-%m-%d %H:%M") == "2023-05-20 02:21"
    assert len(parsed.issues) == 1 and parsed.issues[0].field == "role"


def test_jsonl_groups_sessions_and_names_line_and_field(tmp_path):
    good = {"tenant_id": "t1", "user_id": "u1", "session_id": "s1",
            "session_date": "2024-01-02T10:00:00", "role": "user", "content": "I moved to Oslo."}
    lines = [
        json.dumps(good),
        json.dumps({**good, "role": "assistant", "content": "Nice!"}),
        "{not json",
        json.dumps({**good, "role": "boss"}),
        json.dumps({k: v for k, v in good.items() if k != "user_id"}),
        json.dumps({**good, "content": "x" * 100_001}),
        json.dumps({**good, "tenant_id": "has space"}),
        json.dumps({**good, "session_id": "s2", "content": "Second session."}),
    ]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n")
    parsed = read_file(p)
    assert [s.session_id for s in parsed.sessions] == ["s1", "s2"]
    assert len(parsed.sessions[0].turns) == 1 and len(parsed.sessions[0].turns[0].messages) == 2
    where = {(i.where, i.field) for i in parsed.issues}
    assert ("line 3", None) in where
    assert ("line 4", "role") in where
    assert ("line 5", "user_id") in where
    assert ("line 6", "content") in where
    assert ("line 7", "tenant_id") in where
    assert "100000" in str(next(i for i in parsed.issues if i.field == "content"))


def test_format_errors(tmp_path):
    with pytest.raises(FormatError, match="no such file"):
        read_file(tmp_path / "missing.json")
    p = tmp_path / "x.json"
    p.write_text("[1, 2")
    with pytest.raises(FormatError, match="invalid JSON"):
        read_file(p, "locomo")
    p.write_text(json.dumps([{"foo": 1}]))
    with pytest.raises(FormatError, match="cannot tell the format"):
        detect_format(p)
    with pytest.raises(FormatError, match="--format"):
        read_file(p, "csv")


def _event(i: int, role: str, content: str, session: str = "s1") -> dict:
    return {"tenant_id": "acme", "user_id": "maya", "session_id": session, "role": role,
            "content": content, "message_id": f"{session}#{i}"}


def test_a_skipped_user_message_takes_its_whole_turn_with_it(tmp_path):
    too_long = "x" * 100_001
    lines = [_event(1, "user", "Hello there"), _event(2, "assistant", "Hi!"),
             _event(3, "user", too_long), _event(4, "assistant", "Ok"),
             _event(5, "assistant", "Anything else?"), _event(6, "user", "Yes, one more"),
             _event(7, "assistant", "Sure")]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    parsed = read_file(p)
    (s,) = parsed.sessions
    assert [[m.content for m in t.messages] for t in s.turns] == [
        ["Hello there", "Hi!"], ["Yes, one more", "Sure"]]
    msgs = [str(i) for i in parsed.issues]
    assert msgs[0].startswith("line 3: field 'content'")
    assert msgs[1:] == [f"line {n}: dropped with its turn: the user message at line 3 was "
                        f"skipped" for n in (4, 5)]


def test_the_turn_guard_applies_to_longmemeval_and_locomo(tmp_path):
    lme = [{"question_id": "q1", "haystack_session_ids": ["h1"], "haystack_dates": [None],
            "haystack_sessions": [[{"role": "user", "content": "x" * 100_001},
                                   {"role": "assistant", "content": "Ok"},
                                   {"role": "user", "content": "Next question"}]]}]
    p = tmp_path / "lme.json"
    p.write_text(json.dumps(lme))
    parsed = read_file(p, "longmemeval")
    assert [[m.content for m in t.messages] for t in parsed.sessions[0].turns] == [
        ["Next question"]]
    assert "dropped with its turn" in str(parsed.issues[1])
    conv = json.loads(json.dumps(LOCOMO))
    conv[0]["conversation"]["session_1"][0]["text"] = "y" * 100_001
    p = tmp_path / "locomo.json"
    p.write_text(json.dumps(conv))
    parsed = read_file(p, "locomo")
    assert [t.source_ids for t in parsed.sessions[0].turns] == [["D1:3"]]
    assert str(parsed.issues[1]).startswith("record 0 (conv-x) session_1[1]: dropped with its turn")


def test_jsonl_streams_sessions_grouped_as_if_read_whole(tmp_path):
    from memstrata.ingest.formats import open_source

    lines = [_event(1, "user", "a1", "A"), _event(1, "user", "b1", "B"),
             _event(2, "assistant", "a2", "A"), "{broken", _event(2, "assistant", "b2", "B"),
             _event(3, "user", "a3", "A")]
    p = tmp_path / "mixed.jsonl"
    p.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    source = open_source(p)
    assert (source.session_count, source.turns, source.issue_count) == (2, 3, 1)
    got = [(s.session_id, [[m.content for m in t.messages] for t in s.turns])
           for s in source.sessions()]
    assert got == [("A", [["a1", "a2"], ["a3"]]), ("B", [["b1", "b2"]])]
    # A second pass reads the same sessions again.
    assert [s.session_id for s in source.sessions()] == ["A", "B"]
