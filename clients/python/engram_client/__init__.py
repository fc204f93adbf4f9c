"""engram_client is a typed Python client for engram, the memory daemon for
AI agents: events in (a batch, or a stream), recall for a task, feedback on
what was recalled, and records. Standard library only.

    from engram_client import Client
    c = Client("http://127.0.0.1:8080", api_key)
    c.post_events([{"kind": "user_input", "agent_id": "coder", "thread_id": "t1", "text": "hi"}])

Every call returns dataclasses (engram_client.types); an error answer raises
EngramError with the problem's fields.
"""

from .client import Client, EngramError
from .types import (BudgetUsage, FeedbackRecord, FeedbackResult, FieldError, Item, Layer, Provenance, Record,
                    RecordPage, RetrieveResult, Source, StagedEvent, StreamAck, Why)

__version__ = "0.1.0"

__all__ = [
    "Client", "EngramError", "BudgetUsage", "FeedbackRecord", "FeedbackResult", "FieldError", "Item", "Layer",
    "Provenance", "Record", "RecordPage", "RetrieveResult", "Source", "StagedEvent", "StreamAck", "Why",
]
