"""What the retriever indexes for an L0 unit: dates spelled out for lexical matching."""

from datetime import datetime

from memstrata.model import L0Unit, Scope
from memstrata.retrieval.indexing import date_terms, dense_text, lexical_keywords


def unit(**kw):
    base = dict(id="u", scope=Scope(tenant_id="t", user_id="u"), session_id="s", turn_index=1,
                summary="Caroline went to a support group.", keywords=["support group"])
    return L0Unit(**{**base, **kw})


def test_session_date_and_iso_keywords_are_spelled_out():
    u = unit(session_date=datetime(2023, 5, 8, 13, 56),
             keywords=["support group", "2023-05-07", "the week of 2023-04-24", "2022"])
    assert date_terms(u) == ["8 May 2023", "May 2023", "7 May 2023", "24 April 2023",
                             "April 2023"]
    assert lexical_keywords(u)[:4] == u.keywords


def test_month_only_and_bad_dates():
    u = unit(keywords=["2023-02", "2023-13-40"])
    assert date_terms(u) == ["February 2023"]


def test_no_dates_means_keywords_unchanged():
    u = unit()
    assert lexical_keywords(u) == ["support group"]
    assert dense_text(u) == "Caroline went to a support group. | support group"
