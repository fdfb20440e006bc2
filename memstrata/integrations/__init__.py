"""Adapters that let agent frameworks use memstrata (the ``langgraph`` extra).

:mod:`memstrata.integrations.langgraph` is a LangGraph ``BaseStore``;
:mod:`memstrata.integrations.langchain` a LangChain retriever and chat-message
history. Each reaches memory only through :mod:`memstrata.client` (an
import-linter contract holds them to that), so the service's keys, limits,
fair shares and metrics apply to them as to any other client.
"""
