"""Detectors that need no model: emails, phone numbers, card numbers, IBANs, IP addresses.

Each pattern is narrow on purpose and, where the value carries one, checked by
its checksum, so ordinary numbers survive: a 16-digit number that fails the
Luhn check is not a card, an IBAN must pass mod-97, a phone number needs a
``+`` country code, a leading trunk ``0`` or the North American 3-3-4 shape
with separators (a bare run of digits is not a phone), and dates and version
numbers are neither phones nor IPs.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator

from memstrata.redact.types import RULE_KINDS, Finding

__all__ = ["RuleDetector", "iban_ok", "luhn_ok"]

# -- email ----------------------------------------------------------------------
_EMAIL = re.compile(
    r"(?<![\w.%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}"
    r"(?![\w\-]|\.[A-Za-z0-9])")

# -- phone ----------------------------------------------------------------------
#: ``+`` and a country code, then groups of digits (a group may be in parentheses).
_INTL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .\-]?(?:\(\d{1,5}\)|\d{1,5})){1,7}(?!\d)")
#: North American 3-3-4 with a separator before the last four: ``(555) 123-4567``.
_NANP = re.compile(
    r"(?<![\w+.\-/])(?:1[ .\-])?(?:\([2-9]\d{2}\)|[2-9]\d{2})[ .\-]?\d{3}[ .\-]\d{4}"
    r"(?![\w]|[.\-/]\d)")
#: A national number with its trunk ``0``: ``020 7946 0958``, ``06 12 34 56 78``.
_NATIONAL = re.compile(r"(?<![\w+.\-/,])0\d{1,4}(?:[ .\-]?\d{2,4}){1,5}(?!\d)")
_GROUP_END = re.compile(r"\d\)?(?=[ .\-(]|$)")

# -- cards and IBANs ------------------------------------------------------------
#: A run of digit groups with one kind of separator (a space or a dash).
_DIGIT_RUN = re.compile(r"(?<![\w.,\-])\d+(?:(?P<sep>[ \-])\d+(?:(?P=sep)\d+)*)?(?![\w]|[.,]\d)")
#: Group lengths a card number is written in (a single group of 13-19 is also a card).
_CARD_SHAPES = ((4, 4, 4, 4, 3), (4, 4, 4, 4), (4, 6, 5), (4, 6, 4), (4, 4, 4, 3), (4, 4, 4, 2))
_IBAN = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[A-Z0-9]{11,30}|(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,4})?)"
    r"(?![A-Za-z0-9])")

# -- IP addresses ---------------------------------------------------------------
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(
    r"(?<![\w:.])(?=[0-9A-Fa-f:.]*:[0-9A-Fa-f.]*:)[0-9A-Fa-f:]{2,39}"
    r"(?:(?<=:)(?:\d{1,3}\.){3}\d{1,3})?(?![\w:]|\.\d)")
#: ``version 1.2.3.4``, ``build 10.0.19041.1``: a dotted number after these is no address.
_VERSION_BEFORE = re.compile(r"(?:\bv|\bver\.?|\bversion|\brelease|\bbuild|\bpatch)\s*$",
                             re.IGNORECASE)


def luhn_ok(digits: str) -> bool:
    """Whether a string of digits passes the Luhn checksum (every payment card does)."""
    if not digits.isdigit():
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(iban: str) -> bool:
    """Whether ``iban`` (no spaces) passes the ISO 13616 mod-97 check (its length is 15-34)."""
    if not 15 <= len(iban) <= 34 or not iban.isalnum() or not iban[:2].isalpha():
        return False
    moved = iban[4:] + iban[:4]
    try:
        number = "".join(str(int(ch, 36)) for ch in moved.upper())
    except ValueError:
        return False
    return int(number) % 97 == 1


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def _card(text: str, m: re.Match[str]) -> Iterator[Finding]:
    """Card numbers in one run of digit groups: a known grouping, Luhn-valid, issuer 2-6."""
    groups = [(g.start() + m.start(), g.end() + m.start()) for g in re.finditer(r"\d+", m[0])]
    lengths = [e - s for s, e in groups]
    i = 0
    while i < len(groups):
        found = None
        if 13 <= lengths[i] <= 19:
            found = (i, i + 1)
        else:
            for shape in _CARD_SHAPES:
                if tuple(lengths[i:i + len(shape)]) == shape:
                    found = (i, i + len(shape))
                    break
        if found is not None:
            start, end = groups[found[0]][0], groups[found[1] - 1][1]
            digits = _digits(text[start:end])
            if digits[0] in "23456" and len(set(digits)) > 1 and luhn_ok(digits):
                yield Finding("card", start, end, digits)
                i = found[1]
                continue
        i += 1


def _iban(text: str, m: re.Match[str]) -> Iterator[Finding]:
    """The longest prefix (whole groups) of the match that passes mod-97."""
    end = m.end()
    while end - m.start() >= 15:
        compact = text[m.start():end].replace(" ", "")
        if iban_ok(compact):
            yield Finding("iban", m.start(), end, compact)
            return
        cut = text.rfind(" ", m.start(), end)
        if cut < 0:
            return
        end = cut


def _phone(text: str, m: re.Match[str], low: int, high: int) -> Iterator[Finding]:
    """The longest prefix (whole digit groups) of the match with ``low``-``high`` digits."""
    ends = [m.start() + g.end() for g in _GROUP_END.finditer(m[0])]
    for end in reversed(ends):
        n = len(_digits(text[m.start():end]))
        if low <= n <= high:
            yield Finding("phone", m.start(), end, "+" * (m[0][0] == "+") + _digits(
                text[m.start():end]))
            return


def _ipv4(text: str, m: re.Match[str]) -> Iterator[Finding]:
    parts = m[0].split(".")
    if any(len(p) > 1 and p[0] == "0" for p in parts) or any(int(p) > 255 for p in parts):
        return
    if _VERSION_BEFORE.search(text, max(0, m.start() - 12), m.start()):
        return
    yield Finding("ip", m.start(), m.end(), m[0])


def _ipv6(text: str, m: re.Match[str]) -> Iterator[Finding]:
    candidate = m[0]
    if not any(ch not in ":." for ch in candidate):
        return
    try:
        address = ipaddress.IPv6Address(candidate)
    except ValueError:
        return
    yield Finding("ip", m.start(), m.end(), address.compressed)


_Scan = Callable[[str], Iterator[Finding]]


def _scanners() -> dict[str, list[_Scan]]:
    def each(pattern: re.Pattern[str], check: Callable[[str, re.Match[str]], Iterator[Finding]]
             ) -> _Scan:
        return lambda text: (f for m in pattern.finditer(text) for f in check(text, m))

    return {
        "email": [lambda text: (Finding("email", m.start(), m.end(), m[0].lower())
                                for m in _EMAIL.finditer(text))],
        "phone": [each(_INTL, lambda t, m: _phone(t, m, 8, 15)),
                  each(_NANP, lambda t, m: _phone(t, m, 10, 11)),
                  each(_NATIONAL, lambda t, m: _phone(t, m, 9, 11))],
        "card": [each(_DIGIT_RUN, _card)],
        "iban": [each(_IBAN, _iban)],
        "ip": [each(_IPV4, _ipv4), each(_IPV6, _ipv6)],
    }


class RuleDetector:
    """Regular expressions plus checksums: fast, deterministic, no model to load."""

    name = "rules"

    def __init__(self) -> None:
        self._scan = _scanners()
        #: Cheap pre-checks: a text without '@' holds no email, without a digit no number.
        self._needs: dict[str, Callable[[str], bool]] = {
            "email": lambda t: "@" in t,
            "ip": lambda t: ("." in t or ":" in t) and any(c.isdigit() for c in t),
        }

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(RULE_KINDS)

    def find(self, text: str, kinds: frozenset[str]) -> list[Finding]:
        has_digit = any(ch.isdigit() for ch in text)
        out: list[Finding] = []
        for kind in RULE_KINDS:
            if kind not in kinds:
                continue
            need = self._needs.get(kind)
            if need is not None and not need(text):
                continue
            if kind != "email" and not has_digit:
                continue
            for scan in self._scan[kind]:
                out.extend(scan(text))
        return out
