"""Both clients read ``MEMSTRATA_API_KEY`` when given no key and no settings (issue 31).

Before, the README said they did, the docstring said they never read the environment,
and a client built as the README shows got UNAUTHENTICATED.
"""

from __future__ import annotations

import asyncio

import pytest

from memstrata.client import AsyncMemoryClient, MemoryClient, Unauthenticated
from memstrata.client.settings import ClientSettings
from tests.integration.query_service.conftest import Service
from tests.support.conversation import MAYA


def test_both_clients_take_the_key_from_the_environment(service: Service,
                                                         monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMSTRATA_API_KEY", service.keys.acme)
    with MemoryClient(service.address) as client:
        assert client.key_tenant() == "acme"
        assert client.sessions(MAYA)

    async def aio() -> int:
        async with AsyncMemoryClient(service.address) as client:
            return len(await client.sessions(MAYA))

    assert asyncio.run(aio()) > 0


def test_explicit_settings_and_keys_still_win(service: Service, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMSTRATA_API_KEY", "msk_not_a_real_key")
    with MemoryClient(service.address, api_key=service.keys.acme) as client:
        assert client.sessions(MAYA)
    with MemoryClient(service.address, settings=ClientSettings.model_construct()) as client:
        with pytest.raises(Unauthenticated):  # settings given: the environment is not read
            client.sessions(MAYA)
