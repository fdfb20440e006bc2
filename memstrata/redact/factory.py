"""Build the redactor a process's settings describe (``MEMSTRATA_REDACT_*``)."""

from __future__ import annotations

from memstrata.config import ConfigError, load_namespace
from memstrata.redact.policy import PolicyFileError, PolicySource, Rule
from memstrata.redact.redactor import Redactor
from memstrata.redact.rules import RuleDetector
from memstrata.redact.settings import RedactSettings
from memstrata.redact.types import Detector

__all__ = ["open_redactor"]


def open_redactor(settings: RedactSettings | None = None) -> Redactor:
    """The redactor of ``settings`` (None: read from the environment and the config file).

    Every problem stops the start with a :class:`~memstrata.config.ConfigError` naming
    the variable or the file: a kind no detector finds, Presidio asked for but not
    installed (or its spaCy model missing: it is never downloaded), a bad policy file.
    """
    s = settings if settings is not None else load_namespace(RedactSettings)
    detectors: list[Detector] = [RuleDetector()]
    if s.presidio:
        from memstrata.redact.presidio import PresidioDetector, PresidioUnavailable

        try:
            detectors.append(PresidioDetector(
                model=s.presidio_model, language=s.presidio_language,
                entities=s.entity_list, min_score=s.presidio_min_score))
        except PresidioUnavailable as exc:
            raise ConfigError(str(exc)) from None
    known = frozenset(k for d in detectors for k in d.kinds)
    unknown = [k for k in s.kind_list if k not in known]
    if unknown:
        raise ConfigError(f"{s.variable('kinds')}: unknown kind {unknown[0]!r} (known: "
                          f"{', '.join(sorted(known))}; Presidio's kinds need "
                          f"{s.variable('presidio')}=true)")
    try:
        source = PolicySource(Rule(s.mode, frozenset(s.kind_list)), known, s.policy_file)
    except PolicyFileError as exc:
        raise ConfigError(f"{s.variable('policy_file')}: {exc}") from None
    return Redactor(detectors, source)
