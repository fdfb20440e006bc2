"""Entity and persona profiles, kept offline by rules (TriMem's profiles, AdaMem's routers).

Per (tenant, user): one profile for the user (the persona), one for the
assistant, and one per person, pet, place or organisation the conversations
mention, in sections (identity, attributes, preferences, events, plans) whose
every bullet names the turns it came from. Memory's write path updates them
as sessions arrive (:class:`~memstrata.profiles.book.ProfileBook`); a delete
removes a session's part of them.

* :mod:`.extract` -- rules that read a session into mentions, links and facts;
* :mod:`.llm_extract` -- the builder LLM reads a session into the same (its prompt in
  :mod:`.llm_prompt`), the rules standing in when it fails;
* :mod:`.resolve` -- which keys are one entity ("my sister", "Inês", "she");
* :mod:`.route` -- ADD / UPDATE / IGNORE of each fact, with history;
* :mod:`.book` -- storage in the doc store, incremental updates, reads;
* :mod:`.markdown` -- what ``memstrata profile`` prints.
"""

from memstrata.profiles.book import ProfileBook, ProfileWrite

__all__ = ["ProfileBook", "ProfileWrite"]
