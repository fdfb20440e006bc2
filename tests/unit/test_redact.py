"""The redaction step (memstrata.redact): each pattern kind, the policy, the marker, the counts.

Patterns: a positive and the tricky negatives of each kind (a 16-digit number
that fails Luhn is not a card, dates and versions are neither phones nor IPs).
Policy: off / mask / drop per tenant from a TOML or JSON file, re-read when it
changes. Masking is stable within a message and idempotent. Presidio: its
adapter through a test double, and the real analyzer skipped (with its reason)
when the extra is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from pathlib import Path

import pytest

from memstrata.config import ConfigError
from memstrata.model import Message, Turn
from memstrata.redact import (
    RULE_KINDS,
    Policy,
    PolicyFileError,
    PolicySource,
    Redactor,
    Rule,
    RuleDetector,
    iban_ok,
    luhn_ok,
)
from memstrata.redact.factory import open_redactor
from memstrata.redact.presidio import PresidioDetector, presidio_problem
from memstrata.redact.settings import RedactSettings
from memstrata.wire import TurnEvent

ALL = frozenset(RULE_KINDS)
DETECTOR = RuleDetector()


def found(text: str, kinds: frozenset[str] = ALL) -> list[tuple[str, str]]:
    """(kind, matched text) of every value the rules find, overlaps settled as the redactor does."""
    redactor = Redactor([DETECTOR], Policy(Rule("mask", kinds), {}))
    return [(f.kind, text[f.start:f.end]) for f in redactor.scan(text, kinds)]


# -- each pattern kind --------------------------------------------------------------
@pytest.mark.parametrize(("kind", "value"), [
    ("email", "jane.doe+news@mail.example.co.uk"),
    ("email", "OPS_team@sub-domain.example.org"),
    ("phone", "+44 20 7946 0958"),
    ("phone", "+1 (555) 123-4567"),
    ("phone", "+33 6 12 34 56 78"),
    ("phone", "+491701234567"),
    ("phone", "(555) 123-4567"),
    ("phone", "555.123.4567"),
    ("phone", "020 7946 0958"),
    ("phone", "06 12 34 56 78"),
    ("card", "4111 1111 1111 1111"),
    ("card", "4111111111111111"),
    ("card", "5500-0000-0000-0004"),
    ("card", "3782 822463 10005"),
    ("card", "6011111111111117"),
    ("iban", "DE89 3704 0044 0532 0130 00"),
    ("iban", "GB82WEST12345698765432"),
    ("iban", "FR14 2004 1010 0505 0001 3M02 606"),
    ("ip", "192.168.1.20"),
    ("ip", "203.0.113.77"),
    ("ip", "2001:db8:85a3::8a2e:370:7334"),
    ("ip", "fe80::1"),
    ("ip", "::ffff:192.0.2.1"),
])
def test_each_kind_is_found_inside_a_sentence(kind: str, value: str) -> None:
    text = f"Note this ({value}), thanks."
    assert found(text) == [(kind, value)]


@pytest.mark.parametrize("text", [
    # a 16-digit number that fails the Luhn check is no card (and no phone either)
    "tracking 4111 1111 1111 1112 arrived",
    "ref 4111111111111112",
    # Luhn-valid but no issuer starts with 9 / every digit the same
    "id 9999 9999 9999 9995",
    "id 0000 0000 0000 0000",
    # dates and times
    "on 2024-05-09 at 10:30:45",
    "due 09/05/2024 or 12.05.2024 or 01.02.2024",
    # versions
    "python 3.11.7 and v1.2.3",
    "upgrade to version 1.2.3.4 today",
    "build 10.0.19041.1",
    # numbers that are not phones: a bare run of digits, money, a year
    "order 5551234567 shipped",
    "it cost 1,234,567.89 in 2023",
    # not addresses
    "999.1.1.1 is out of range",
    "std::vector and a MAC 00:1A:2B:3C:4D:5E",
    # a broken IBAN checksum, a handle, an email without a domain suffix
    "DE89 3704 0044 0532 0130 01",
    "ping @maya or maya@localhost",
])
def test_tricky_negatives_are_left_alone(text: str) -> None:
    assert found(text) == []


def test_luhn_and_mod97_reject_any_single_digit_change() -> None:
    card, iban = "4111111111111111", "GB82WEST12345698765432"
    assert luhn_ok(card) and iban_ok(iban)
    for i in range(len(card)):
        changed = card[:i] + str((int(card[i]) + 1) % 10) + card[i + 1:]
        assert not luhn_ok(changed), changed
    for i in [j for j, ch in enumerate(iban) if ch.isdigit()]:
        changed = iban[:i] + str((int(iban[i]) + 1) % 10) + iban[i + 1:]
        assert not iban_ok(changed), changed


def test_a_number_after_a_phone_is_not_swallowed() -> None:
    assert found("call +44 20 7946 0958 2024 please") == [("phone", "+44 20 7946 0958")]
    assert found("card 4111 1111 1111 1111 2030 exp") == [("card", "4111 1111 1111 1111")]
    assert found("DE89 3704 0044 0532 0130 00 AND MORE") == [
        ("iban", "DE89 3704 0044 0532 0130 00")]


def test_only_the_kinds_asked_for_are_found() -> None:
    text = "mail a.b@example.com from 10.0.0.1"
    assert found(text, frozenset({"ip"})) == [("ip", "10.0.0.1")]
    assert found(text, frozenset({"email"})) == [("email", "a.b@example.com")]


# -- masking ---------------------------------------------------------------------------
def masker(mode: str = "mask", **tenants: Rule) -> Redactor:
    return Redactor([DETECTOR], Policy(Rule(mode, ALL), dict(tenants)))  # type: ignore[arg-type]


def test_mask_uses_typed_placeholders_stable_within_a_message() -> None:
    r = masker()
    m = Message(role="user", content="Write bob@example.com or BOB@example.com, "
                                     "cc al@example.io, call +44 20 7946 0958.")
    out = r.message("acme", m)
    assert out is not None
    assert out.content == "Write [EMAIL] or [EMAIL], cc [EMAIL_2], call [PHONE]."
    assert out.redacted == ("email", "phone")
    assert (out.role, out.source_id) == (m.role, m.source_id)


def test_mask_is_idempotent_and_keeps_the_marker() -> None:
    r = masker()
    once = r.message("acme", Message(role="user", content="card 4111 1111 1111 1111",
                                     source_id="m1"))
    assert once is not None
    before = (r.counts.values(), r.counts.messages())
    twice = r.message("acme", once)
    assert twice == once  # the placeholder matches no detector: nothing changes
    assert (r.counts.values(), r.counts.messages()) == before  # and nothing is counted


def test_off_drop_and_per_tenant_rules() -> None:
    r = masker("off", drops=Rule("drop", ALL), cards=Rule("mask", frozenset({"card"})))
    m = Message(role="user", content="mail x@example.com, card 4111 1111 1111 1111")
    assert r.message("anyone", m) is m
    assert r.message("drops", m) is None
    only_card = r.message("cards", m)
    assert only_card is not None and only_card.content == "mail x@example.com, card [CARD]"
    clean = Message(role="user", content="nothing to see here")
    assert r.message("drops", clean) is clean
    assert r.counts.messages() == {("drops", "drop"): 1, ("cards", "mask"): 1}
    assert r.counts.values() == {("drops", "email"): 1, ("drops", "card"): 1,
                                 ("cards", "card"): 1}


def test_counts_hold_tenants_and_kinds_never_values() -> None:
    r = masker()
    r.message("acme", Message(role="user", content="x.secret.person@example.com"))
    flat = json.dumps([list(k) for k in [*r.counts.values(), *r.counts.messages()]])
    assert "secret" not in flat and "example" not in flat
    assert r.counts.values() == {("acme", "email"): 1}


def test_masked_text_is_clipped_to_the_limit() -> None:
    r = masker()
    text = " ".join(f"a{i}@b.co" for i in range(50))
    out = r.message("acme", Message(role="user", content=text), max_chars=len(text))
    assert out is not None and len(out.content) <= len(text)
    assert "@" not in out.content


def test_a_session_with_a_dropped_message_is_regrouped_by_arrival() -> None:
    """The stream path joins a reply to the last kept turn; batch ingest must store the same."""
    r = masker("drop")
    turns = [Turn(index=1, messages=[Message(role="user", content="hello"),
                                     Message(role="assistant", content="hi")]),
             Turn(index=2, messages=[Message(role="user", content="mail me: q@example.com"),
                                     Message(role="assistant", content="noted")])]
    out = r.turns("acme", turns)
    assert [[m.content for m in t.messages] for t in out] == [["hello", "hi", "noted"]]
    assert [t.index for t in out] == [1]
    by_index = r.indexed_turns("acme", turns)
    assert [(t.index, [m.content for m in t.messages]) for t in by_index] == [
        (1, ["hello", "hi"]), (2, ["noted"])]


def test_a_wire_event_carries_the_marker_to_the_worker() -> None:
    r = masker()
    e = TurnEvent(tenant_id="acme", user_id="u", session_id="s", message_id="m1", role="user",
                  content="ip 203.0.113.9", ts="2024-01-01T00:00:00Z")  # type: ignore[arg-type]
    out = r.event(e)
    assert out is not None and out.content == "ip [IP]" and out.redacted == ["ip"]
    again = TurnEvent.model_validate_json(out.to_bytes())
    assert again.message().redacted == ("ip",) and again.message_id == "m1"
    assert "redacted" not in json.loads(e.to_bytes())  # unredacted events are unchanged


def test_the_marker_is_left_out_of_stored_json_when_empty() -> None:
    plain = Message(role="user", content="hi")
    assert "redacted" not in plain.model_dump(mode="json")
    marked = plain.model_copy(update={"redacted": ("email",)})
    assert Message.model_validate(marked.model_dump(mode="json")).redacted == ("email",)


# -- the policy file and the settings ---------------------------------------------------
BASE = Rule("off", ALL)


def test_policy_file_in_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "policy.toml"
    toml.write_text('[default]\nmode = "mask"\n\n[tenants.acme]\nmode = "drop"\n'
                    'kinds = ["card"]\n')
    p = PolicySource(BASE, ALL, toml).current()
    assert p.rule("other") == Rule("mask", ALL)
    assert p.rule("acme") == Rule("drop", frozenset({"card"}))
    js = tmp_path / "policy.json"
    js.write_text(json.dumps({"tenants": {"beta": {"mode": "mask"}}}))
    q = PolicySource(BASE, ALL, js).current()
    assert q.rule("beta") == Rule("mask", ALL) and q.rule("x") == BASE and q.active


@pytest.mark.parametrize(("body", "named"), [
    ('{"tenants": {"acme": {"mode": "shred"}}}', "tenants.acme.mode"),
    ('{"tenants": {"acme": {"kinds": ["email", "dna"]}}}', "tenants.acme.kinds"),
    ('{"tenant": {}}', "tenant"),
    ('{"tenants": {"bad id": {}}}', "tenants.bad id"),
    ('{"tenants": ', "not valid JSON"),
])
def test_a_bad_policy_file_is_refused_naming_the_place(tmp_path: Path, body: str,
                                                       named: str) -> None:
    path = tmp_path / "policy.json"
    path.write_text(body)
    with pytest.raises(PolicyFileError) as err:
        PolicySource(BASE, ALL, path)
    assert named in str(err.value) and str(path) in str(err.value)


def test_the_policy_file_is_read_again_and_a_bad_edit_keeps_the_last_good(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"tenants": {"acme": {"mode": "mask"}}}))
    now = [0.0]
    source = PolicySource(BASE, ALL, path, check_every_s=1.0, clock=lambda: now[0])
    assert source.current().rule("acme").mode == "mask"
    path.write_text(json.dumps({"tenants": {"acme": {"mode": "drop"}}}) + " ")
    os.utime(path, ns=(1, 1))  # a new stamp even within the file system's time resolution
    assert source.current().rule("acme").mode == "mask"  # not checked again yet
    now[0] = 2.0
    assert source.current().rule("acme").mode == "drop"
    secret = "do-not-echo-this@example.com"
    path.write_text('{"tenants": {"acme": {"mode": "' + secret + '"}}}')
    now[0] = 4.0
    with caplog.at_level(logging.ERROR):
        assert source.current().rule("acme").mode == "drop"  # the last good one
    assert source.problem is not None and "tenants.acme.mode" in source.problem
    assert caplog.records and secret not in caplog.text


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMSTRATA_REDACT_MODE", "drop")
    monkeypatch.setenv("MEMSTRATA_REDACT_KINDS", "email, ip")
    s = RedactSettings()
    assert (s.mode, s.kind_list) == ("drop", ("email", "ip"))
    r = open_redactor(s)
    assert r.rule("any") == Rule("drop", frozenset({"email", "ip"}))


def test_an_unknown_kind_is_refused_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="MEMSTRATA_REDACT_KINDS.*'person'"):
        open_redactor(RedactSettings(kinds="email,person"))


def test_a_bad_policy_file_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("[default]\nmode = 3\n")
    with pytest.raises(ConfigError, match="MEMSTRATA_REDACT_POLICY_FILE.*default.mode"):
        open_redactor(RedactSettings(policy_file=path))


def test_default_is_off_and_scans_nothing() -> None:
    r = open_redactor(RedactSettings())
    m = Message(role="user", content="x@example.com")
    assert not r.active and r.message("acme", m) is m and r.counts.values() == {}


# -- metrics -------------------------------------------------------------------------------
def test_metric_labels_are_tenant_and_kind_only() -> None:
    from prometheus_client import CollectorRegistry

    from memstrata.redact.metrics import register_redaction_metrics

    class MemoryDouble:
        """Test double: only the redactor a service reads the counts from."""

        redactor = masker()

    memory = MemoryDouble()
    registry = CollectorRegistry()
    assert register_redaction_metrics(registry, memory) is not None
    assert register_redaction_metrics(registry, memory) is None  # once per registry
    memory.redactor.message("acme", Message(role="user", content="q.hidden@example.com"))
    samples = [s for fam in registry.collect() for s in fam.samples]
    assert ("memstrata_redactions_total", {"tenant": "acme", "kind": "email"}, 1.0) in [
        (s.name, s.labels, s.value) for s in samples]
    assert all("hidden" not in v and "@" not in v for s in samples for v in s.labels.values())
    other = CollectorRegistry()
    assert register_redaction_metrics(other, memory, included=[registry]) is None


# -- Presidio ------------------------------------------------------------------------------
class AnalyzerDouble:
    """Test double of Presidio's AnalyzerEngine: reports each name it was given."""

    class Result:
        def __init__(self, entity_type: str, start: int, end: int) -> None:
            self.entity_type, self.start, self.end, self.score = entity_type, start, end, 0.9

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.calls: list[dict[str, object]] = []

    def analyze(self, *, text: str, language: str, entities: list[str],
                score_threshold: float) -> list["AnalyzerDouble.Result"]:
        self.calls.append({"language": language, "entities": entities,
                           "score_threshold": score_threshold})
        out = []
        for name in self.names:
            at = text.find(name)
            if at >= 0:
                out.append(self.Result("PERSON", at, at + len(name)))
        return out


def test_the_presidio_adapter_maps_entities_to_kinds_and_placeholders() -> None:
    analyzer = AnalyzerDouble(["Ines Moreau"])
    presidio = PresidioDetector(analyzer=analyzer, entities=["PERSON", "EMAIL_ADDRESS"])
    assert presidio.kinds == {"person", "email"}
    r = Redactor([DETECTOR, presidio], Policy(Rule("mask", ALL | {"person"}), {}))
    out = r.message("acme", Message(role="user", content="Ines Moreau wrote from im@example.com"))
    assert out is not None and out.content == "[PERSON] wrote from [EMAIL]"
    assert out.redacted == ("email", "person")
    assert analyzer.calls[0]["entities"] == ["PERSON", "EMAIL_ADDRESS"]


def test_presidio_asked_for_but_missing_stops_the_start_with_its_reason() -> None:
    problem = presidio_problem("en_core_web_lg")
    if problem is None:
        pytest.skip("Presidio and its spaCy model are installed: nothing is missing")
    with pytest.raises(ConfigError) as err:
        open_redactor(RedactSettings(presidio=True))
    assert "MEMSTRATA_REDACT_PRESIDIO" in str(err.value) and problem in str(err.value)


@pytest.mark.skipif(importlib.util.find_spec("presidio_analyzer") is None,
                    reason="presidio-analyzer is not installed (the optional 'presidio' extra)")
def test_presidio_finds_a_name_the_rules_cannot() -> None:
    model = os.environ.get("MEMSTRATA_REDACT_PRESIDIO_MODEL", "en_core_web_lg")
    problem = presidio_problem(model)
    if problem is not None:
        pytest.skip(problem)
    r = open_redactor(RedactSettings(presidio=True, presidio_model=model,
                                     kinds="email,person"))
    out = r.message("acme", Message(role="user", content="Yesterday Barack Obama called me."))
    assert out is not None and "Obama" not in out.content and "person" in out.redacted


def test_a_jsonl_line_keeps_its_marker_through_ingest() -> None:
    """An export writes the marker; ingesting the file again keeps it on the message."""
    from memstrata.model import TurnEvent as JsonlEvent

    line = {"tenant_id": "acme", "user_id": "u", "session_id": "s", "role": "user",
            "content": "mail [EMAIL]", "message_id": "m1", "redacted": ["email"]}
    message = JsonlEvent.model_validate(line).message()
    assert message.redacted == ("email",) and message.source_id == "m1"
    r = masker()
    assert r.message("acme", message) is message  # nothing left to mask: kept as it is


def test_the_redact_namespace_and_the_presidio_extra_are_declared() -> None:
    """pyproject registers MEMSTRATA_REDACT_* (so its variables are accepted, typos are
    not) and the optional extra, which `all` leaves out (it needs a spaCy model)."""
    import tomllib

    from memstrata.config import _load, unknown_variables

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml")
                            .read_text())["project"]
    assert _load(project["entry-points"]["memstrata.settings"]["redact"]) is RedactSettings
    assert unknown_variables({"MEMSTRATA_REDACT_MODE": "mask",
                              "MEMSTRATA_REDACT_MOOD": "x"}) == ["MEMSTRATA_REDACT_MOOD"]
    extras = project["optional-dependencies"]
    assert extras["presidio"] == ["presidio-analyzer>=2.2"]
    assert not any("presidio" in e for e in extras["all"])


def test_the_export_says_a_message_was_redacted() -> None:
    from memstrata.lifecycle.records import ExportedSession, turn_events
    from memstrata.model import Scope, SessionMeta

    masked = masker().message("acme", Message(role="user", content="x@example.com",
                                                 source_id="m1"))
    assert masked is not None
    session = ExportedSession(
        meta=SessionMeta(scope=Scope(tenant_id="acme", user_id="u"), session_id="s"),
        turns=[Turn(index=1, messages=[masked, Message(role="assistant", content="ok")])])
    lines = turn_events(session)
    assert lines[0]["redacted"] == ["email"] and lines[0]["content"] == "[EMAIL]"
    assert "redacted" not in lines[1]
