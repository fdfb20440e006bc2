"""The data's whole life beyond writes and reads: export, backup and restore.

* :mod:`~memstrata.lifecycle.records`: the export format (JSONL turn events that
  ``memstrata ingest`` reads, a header line, the derived layers' records); it
  imports the domain model only, so the client can use it.
* :mod:`~memstrata.lifecycle.export`: reading a user's or a tenant's sessions out
  of a doc store and writing them in that format.
* :mod:`~memstrata.lifecycle.backup`: a consistent snapshot of an embedded data
  dir with a manifest, and its restore into an empty data dir.
* :mod:`~memstrata.lifecycle.pause`: how ``memstrata serve`` lets a backup pause
  its writes (a private socket in the data dir).

This module imports nothing, so importing one part never loads another.
"""
