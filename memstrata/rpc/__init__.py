"""The wire form of ``memstrata.v1.MemoryService``: one package both ends import.

The query service (``query_service``) and the clients (``memstrata.client``)
speak the same messages and convert them the same way, so the code lives
here, in the core, and neither side reaches into the other:

- :mod:`memstrata.rpc.memory_pb2` and :mod:`memstrata.rpc.memory_pb2_grpc`:
  the messages and the service stubs, generated from
  ``proto/memstrata/v1/memory.proto`` by ``proto/generate.py`` (never edited
  by hand; ``tests/unit/test_proto_generated.py`` fails when they are stale);
- :mod:`memstrata.rpc.convert`: domain models (sessions, units, turns, layers,
  trace steps) to messages and back, exactly;
- :mod:`memstrata.rpc.answers`: the controller's answer, its sources and its
  trace summary to messages and back.

Submodules load on import (``from memstrata.rpc import memory_pb2 as pb``);
this package itself imports nothing, so naming it costs neither protobuf nor
grpc. The converters use only the reader contract's models
(:mod:`memstrata.model`, :mod:`memstrata.contract`), never an engine.
"""
