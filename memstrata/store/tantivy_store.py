"""Embedded BM25 store: a tantivy index in a local directory.

Queries never go through tantivy's query parser: free text is analysed with the
same chain as the ``en_stem`` tokenizer (simple tokenizer, drop tokens over 40
bytes, lowercase, English Snowball stemmer) and turned into term queries. So a
user's ``?:"()*`` is just punctuation, never syntax, and the query terms match
exactly the terms the index holds.
"""

from __future__ import annotations

import json
import struct
import threading
import zlib
from collections.abc import Collection, Sequence
from pathlib import Path

import tantivy as tv

from memstrata.model import Scope
from memstrata.native_heap import trim
from memstrata.store._errors import guard
from memstrata.store.types import FIELD_TIE_BREAKER, Hit, LexicalDoc, LexicalStore, StoreError
from memstrata.text.terms import stem_analyzer

BACKEND = "tantivy"
_SEARCH_FIELDS = ("text", "keywords")
#: Ids kept per searcher (about 200 bytes each); past it, hits read their stored document.
_MAX_CACHED_IDS = 200_000
#: Distinct query terms kept (in order of first appearance); longer queries are clipped.
MAX_QUERY_TERMS = 256


#: What an open that fails on the index's own files adds: the way out.
REBUILD_HINT = ("if its files are damaged, `memstrata check` names the damage and `memstrata "
                "check --repair` moves the index aside and rebuilds it from the L0 units in the "
                "doc store")
#: The files every segment has (tantivy's segment components), by extension.
_SEGMENT_FILES = ("idx", "pos", "term", "store", "fast", "fieldnorm")
#: tantivy ends each file with a JSON footer (version, CRC-32 of the body), its length
#: (u32) and this magic number (u32), little-endian.
_FOOTER_MAGIC = 1337
_CHUNK = 1 << 20


def _file_problem(path: Path, checksum: bool) -> str | None:
    """Why one segment file is damaged (missing, cut short, or its checksum differs)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            if size < 8:
                return f"{path.name}: cut short ({size} bytes)"
            f.seek(size - 8)
            length, magic = struct.unpack("<II", f.read(8))
            if magic != _FOOTER_MAGIC or length > size - 8:
                return f"{path.name}: no valid footer (cut short or overwritten)"
            body = size - 8 - length
            f.seek(body)
            try:
                footer = json.loads(f.read(length))
                expected = int(footer["crc"])
            except (ValueError, KeyError, TypeError):
                return f"{path.name}: its footer cannot be read"
            if not checksum:
                return None
            f.seek(0)
            crc, left = 0, body
            while left:
                chunk = f.read(min(_CHUNK, left))
                if not chunk:
                    return f"{path.name}: cut short"
                crc = zlib.crc32(chunk, crc)
                left -= len(chunk)
    except FileNotFoundError:
        return f"{path.name}: missing"
    except OSError as exc:
        return f"{path.name}: cannot be read ({exc})"
    return None if crc == expected else f"{path.name}: checksum mismatch (its content changed)"


def _segment_files(meta: dict[str, object]) -> list[str]:
    names: list[str] = []
    segments = meta.get("segments")
    if not isinstance(segments, list):
        raise ValueError("no segment list")
    for seg in segments:
        base = str(seg["segment_id"]).replace("-", "")
        names += [f"{base}.{ext}" for ext in _SEGMENT_FILES]
        deletes = seg.get("deletes")
        if deletes:
            names.append(f"{base}.{int(deletes['opstamp'])}.del")
    return names


def verify_index_files(path: str | Path, *, checksum: bool = True,
                       attempts: int = 3) -> list[str]:
    """What is wrong with the index files at ``path`` (empty: sound), without opening it.

    Reads ``meta.json`` and, for every segment it lists, each file's footer
    and (``checksum``) the CRC-32 of its content, as tantivy wrote it: a
    file cut short makes tantivy refuse to open the index, and one
    overwritten in the middle opens and answers from the damaged bytes.
    Segment files never change once written, so this reads safely beside a
    writing process; a file that a merge removed meanwhile is read again
    from the newer ``meta.json`` (``attempts`` times at most).
    """
    root = Path(path)
    if not root.is_dir():
        return []
    meta_path = root / "meta.json"
    problems: list[str] = []
    for _ in range(max(1, attempts)):
        try:
            text = meta_path.read_text()
        except FileNotFoundError:
            if any(p.suffix.lstrip(".") in _SEGMENT_FILES for p in root.iterdir()):
                return ["meta.json: missing (the index would open empty)"]
            return []
        except OSError as exc:
            return [f"meta.json: cannot be read ({exc})"]
        try:
            names = _segment_files(json.loads(text))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return [f"meta.json: cannot be read ({type(exc).__name__}: {exc})"]
        problems = [why for name in names
                    if (why := _file_problem(root / name, checksum)) is not None]
        try:
            unchanged = meta_path.read_text() == text
        except OSError:
            unchanged = False
        if not problems or unchanged:
            return problems
    return problems


def _schema() -> tv.Schema:
    b = tv.SchemaBuilder()
    for raw in ("id", "tenant_id", "user_id", "session_id"):
        b.add_text_field(raw, stored=True, tokenizer_name="raw")
    b.add_integer_field("turn_index", stored=True)
    for text in _SEARCH_FIELDS:
        b.add_text_field(text, stored=False, tokenizer_name="en_stem")
    return b.build()


class TantivyLexicalStore(LexicalStore):
    """L0 summaries and keywords in a tantivy index, BM25 over both fields.

    Every :meth:`upsert` and :meth:`delete` commits once and reloads the reader,
    so writes are visible to the next search without a separate flush.

    With ``commit_on_write=False`` upserts wait in the writer until
    :meth:`flush` (a commit costs ~0.1 s, most of a one-turn append); deletes
    always commit at once.

    ``read_only`` opens no IndexWriter (so it never contends for tantivy's
    writer lock): searches see each commit of the writing process as it lands.
    """

    name = BACKEND

    def __init__(self, path: str | Path, *, heap_size: int = 64_000_000,
                 read_only: bool = False, commit_on_write: bool = True,
                 reopen_commits: int = 1000) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.commit_on_write = commit_on_write
        self.heap_size = heap_size
        #: Commits after which the writer reopens the index (0: never). tantivy's ``Index``
        #: keeps about a kilobyte per commit until it is dropped (bench/tantivy_reopen.py),
        #: so a store that commits for days would otherwise grow without bound.
        self.reopen_commits = reopen_commits
        #: Times the index was reopened, and commits since the last time.
        self.reopens = 0
        self._commits = 0
        self._dirty = False
        self._lock = threading.Lock()  # one writer; commits and reloads are serialised
        self._closed = False
        self._writer: tv.IndexWriter | None = None
        #: Bumped after each reload; a searcher taken at generation g holds every commit to g.
        self._generation = 0
        #: (generation, searcher, ids by doc address): a writer's searcher and the ids of the
        #: documents its searches returned, so a repeated hit costs no stored-document read.
        self._view: tuple[int, tv.Searcher, dict[tuple[int, int], tuple[str, str]]] | None = None
        with guard(BACKEND, f"open index at {self.path}"):
            if read_only and not self.path.is_dir():
                raise StoreError(f"{BACKEND}: no index at {self.path} (nothing ingested yet?)")
            self.path.mkdir(parents=True, exist_ok=True)
            self._schema = _schema()
            self._index = self._open_index()
        if not read_only:
            self._writer = self._open_writer(self._index)
        self._analyzer = stem_analyzer()

    def _open_writer(self, index: tv.Index) -> tv.IndexWriter:
        with guard(BACKEND, f"open writer at {self.path} (is another process using it?)"):
            return index.writer(heap_size=self.heap_size, num_threads=1)

    def _open_index(self) -> tv.Index:
        try:
            index = tv.Index(self._schema, path=str(self.path), reuse=True)
        except ValueError as exc:  # the engine's error on a damaged file, with the fix
            raise StoreError(f"{BACKEND}: open index at {self.path} failed: {exc}; "
                             f"{REBUILD_HINT}") from exc
        # A writer reloads explicitly after each commit (the file watcher would
        # lag); a reader follows the writer's commits.
        index.config_reader(reload_policy="OnCommit" if self.read_only else "manual")
        return index

    def _w(self) -> tv.IndexWriter:
        self._check_open()
        if self._writer is None:
            why = "is open read-only" if self.read_only else "lost its writer in a failed reopen"
            raise StoreError(f"{BACKEND}: index at {self.path} {why}")
        return self._writer

    # -- writes -----------------------------------------------------------
    def upsert(self, docs: Sequence[LexicalDoc]) -> None:
        """Replace documents by id (delete then add), with one commit for the whole batch."""
        if not docs:
            return
        with self._lock, guard(BACKEND, f"upsert {len(docs)} documents"):
            writer = self._w()
            for d in docs:
                writer.delete_documents_by_term("id", d.id)
                writer.add_document(self._document(d))
            if self.commit_on_write:
                self._commit()
            else:
                self._dirty = True

    def delete(self, scope: Scope, session_id: str | None = None) -> None:
        query = self._scope_query(scope, None if session_id is None else [session_id])
        with self._lock, guard(BACKEND, f"delete {scope}/{session_id or '*'}"):
            self._w().delete_documents_by_query(query)
            self._commit()

    @staticmethod
    def _document(d: LexicalDoc) -> tv.Document:
        doc = tv.Document(
            id=d.id,
            tenant_id=d.scope.tenant_id,
            user_id=d.scope.user_id,
            session_id=d.session_id,
            turn_index=d.turn_index,
            text=d.text,
        )
        for kw in d.keywords:
            doc.add_text("keywords", kw)
        return doc

    def _commit(self) -> None:
        self._dirty = False
        self._w().commit()
        self._commits += 1
        if self.reopen_commits and self._commits >= self.reopen_commits:
            self._reopen()
        else:
            self._index.reload()
        self._generation += 1  # after the reload: a search that reads it sees the commit

    def _reopen(self) -> None:
        """Drop the index and its writer and open both again (under ``_lock``, just
        after a commit, so nothing is waiting in the writer).

        This frees what tantivy's ``Index`` keeps per commit; replacing the writer
        alone does not. glibc is then asked to return the freed pages. Searches
        running meanwhile keep the searcher they hold; the next one takes the new
        index's.
        """
        self._commits = 0
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.wait_merging_threads()  # consumes the writer and frees its lock
        index = self._open_index()
        self._writer = self._open_writer(index)
        self._index = index
        self.reopens += 1
        trim()  # the old writer's thread arena would keep its freed pages resident

    # -- reads ------------------------------------------------------------
    def terms(self, query: str) -> list[str]:
        """The distinct stemmed terms of ``query``, as the index would hold them."""
        seen: dict[str, None] = {}
        for term in self._analyzer.analyze(query):
            seen.setdefault(term, None)
            if len(seen) >= MAX_QUERY_TERMS:
                break
        return list(seen)

    def search(
        self,
        scope: Scope,
        query: str,
        limit: int,
        session_ids: Collection[str] | None = None,
    ) -> list[Hit]:
        if limit <= 0 or (session_ids is not None and not session_ids):
            return []
        terms = self.terms(query)
        if not terms:
            return []
        # Per term, the better of the two fields plus a share of the other.
        should = [
            (
                tv.Occur.Should,
                tv.Query.disjunction_max_query(
                    [tv.Query.term_query(self._schema, f, t) for f in _SEARCH_FIELDS],
                    FIELD_TIE_BREAKER,
                ),
            )
            for t in terms
        ]
        # The scope clause filters without scoring, so BM25 alone orders the hits.
        q = tv.Query.boolean_query(
            [
                (
                    tv.Occur.Must,
                    tv.Query.const_score_query(self._scope_query(scope, session_ids), 0.0),
                ),
                (tv.Occur.Must, tv.Query.boolean_query(should)),
            ]
        )
        with guard(BACKEND, f"search {scope}"):
            self._check_open()
            searcher, ids = self._searcher()
            hits = []
            for score, address in searcher.search(q, limit, count=False).hits:
                key = (address.segment_ord, address.doc)
                found = ids.get(key)
                if found is None:
                    doc = searcher.doc(address)
                    found = (str(doc.get_first("id")), str(doc.get_first("session_id")))
                    if len(ids) < _MAX_CACHED_IDS:
                        ids[key] = found
                hits.append(Hit(found[0], found[1], float(score)))
        return hits

    def _searcher(self) -> tuple[tv.Searcher, dict[tuple[int, int], tuple[str, str]]]:
        """A searcher and the ids its documents are known to hold.

        A doc address names a document only within one searcher, so the ids are
        kept with the searcher they came from. A writer reloads only in
        :meth:`_commit`, which bumps the generation afterwards: a view of an
        older generation is replaced, never read past a commit. A read-only
        store follows another process's commits without telling, so it keeps no
        view (every hit reads its stored document, as before).
        """
        if self.read_only:
            return self._index.searcher(), {}
        generation = self._generation  # read before the searcher is taken
        view = self._view
        if view is None or view[0] != generation:
            view = (generation, self._index.searcher(), {})
            self._view = view
        return view[1], view[2]

    def count(self, scope: Scope | None = None) -> int:
        with guard(BACKEND, f"count {scope or 'all'}"):
            self._check_open()
            searcher = self._index.searcher()
            if scope is None:
                return int(searcher.num_docs)
            # The stubs omit SearchResult.count; with count=True it is the total match count.
            result = searcher.search(self._scope_query(scope), 1, count=True)
            return int(result.count)  # type: ignore[attr-defined]

    def count_session(self, scope: Scope, session_id: str) -> int:
        with guard(BACKEND, f"count {scope}/{session_id}"):
            self._check_open()
            result = self._index.searcher().search(self._scope_query(scope, [session_id]), 1,
                                                   count=True)
            return int(result.count)  # type: ignore[attr-defined]

    def _scope_query(self, scope: Scope, session_ids: Collection[str] | None = None) -> tv.Query:
        must = [
            (tv.Occur.Must, tv.Query.term_query(self._schema, "tenant_id", scope.tenant_id)),
            (tv.Occur.Must, tv.Query.term_query(self._schema, "user_id", scope.user_id)),
        ]
        if session_ids is not None:
            sessions = sorted(set(session_ids))
            must.append(
                (tv.Occur.Must, tv.Query.term_set_query(self._schema, "session_id", sessions))
            )
        return tv.Query.boolean_query(must)

    def verify(self, *, checksum: bool = True) -> list[str]:
        """What is wrong with this index's files (:func:`verify_index_files`)."""
        return verify_index_files(self.path, checksum=checksum)

    # -- lifecycle --------------------------------------------------------
    def flush(self) -> None:
        """Commit upserts still waiting (only with ``commit_on_write=False``)."""
        with self._lock, guard(BACKEND, "flush"):
            self._check_open()
            if self._dirty:
                self._commit()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._view = None
            if self._writer is None:
                return
            with guard(BACKEND, "close"):
                if self._dirty:
                    self._dirty = False
                    self._writer.commit()
                self._writer.wait_merging_threads()  # consumes the writer and frees its lock
                self._writer = None

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{BACKEND}: index at {self.path} is closed")
