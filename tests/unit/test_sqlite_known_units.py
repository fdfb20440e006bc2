"""SQLite's units kept between searches are never stale: any commit empties them."""

from memstrata.model import L0Unit, Scope
from memstrata.store.sqlite_docs import SqliteDocStore

SCOPE = Scope(tenant_id="t", user_id="u")


def _unit(summary: str, uid: str = "a") -> L0Unit:
    return L0Unit(id=uid, scope=SCOPE, session_id="s", turn_index=1, summary=summary)


def test_a_rewritten_unit_is_read_anew_by_this_and_another_connection(tmp_path):
    path = tmp_path / "docs.sqlite"
    writer = SqliteDocStore(path)
    reader = SqliteDocStore(path, read_only=True)  # another connection, as another process
    try:
        writer.put_units([_unit("before"), _unit("other", "b")])
        for store in (writer, reader):
            assert [u.summary for u in store.get_units(SCOPE, ["a", "b"])] == ["before", "other"]
            assert store.get_units(SCOPE, ["a"])[0].summary == "before"  # kept
        writer.put_units([_unit("after")])
        for store in (writer, reader):
            assert [u.summary for u in store.get_units(SCOPE, ["b", "a", "b"])] == ["other",
                                                                                  "after"]
        writer.delete(SCOPE, "s")
        assert writer.get_units(SCOPE, ["a", "b"]) == []
        assert reader.get_units(SCOPE, ["a", "b"]) == []
        # Another scope never sees this one's units, kept or not.
        writer.put_units([_unit("mine")])
        writer.get_units(SCOPE, ["a"])
        assert writer.get_units(Scope(tenant_id="t", user_id="v"), ["a"]) == []
    finally:
        reader.close()
        writer.close()
