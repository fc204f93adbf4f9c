"""Stream an agent's events into engram, recall for a task, give feedback.

    ENGRAM_URL=http://127.0.0.1:8080 ENGRAM_API_KEY=ek_... python3 examples/quickstart.py
"""

import os
import time
import uuid
from typing import Tuple

from engram_client import Client, EngramError, FeedbackResult, RetrieveResult


def run(client: Client, thread: str) -> Tuple[RetrieveResult, FeedbackResult]:
    # What the agent did, streamed as it happens: each line is acknowledged
    # once durable.
    events = [
        {"kind": "user_input", "agent_id": "coder", "thread_id": thread, "text": "the build is broken"},
        {"kind": "tool_call", "agent_id": "coder", "thread_id": thread,
         "tool": {"name": "make", "arguments": ["build"]}},
        {"kind": "error", "agent_id": "coder", "thread_id": thread, "error": {"message": "ld: cache mismatch"}},
        {"kind": "fact", "agent_id": "coder", "thread_id": thread,
         "fact": {"subject": "repo", "predicate": "build_tool", "object": "make", "conditions": {"os": "linux"}}},
    ]
    for ack in client.stream_events(events):
        if not ack.ok:
            raise SystemExit("line %d refused: %s" % (ack.line, ack.error))
        print("line %d staged as event %s" % (ack.line, ack.id))

    # Recall for a task. The ingest worker turns staged events into memory
    # within moments, so ask again until something is there.
    task = {"text": "the build fails with a cache mismatch", "agent_id": "coder", "thread_id": thread}
    deadline = time.monotonic() + 30
    result = client.recall(task, budget={"items": 10})
    while not result.items() and time.monotonic() < deadline:
        time.sleep(0.2)
        result = client.recall(task, budget={"items": 10})
    print("retrieval %s: %d items" % (result.retrieval_id, len(result.items())))
    for layer in result.layers:
        for item in layer.items:
            print("  %-10s %.2f  %s  %s" % (layer.name, item.score, item.record.id, item.record.type))

    # It helped: reinforce what was recalled.
    fb = client.feedback("used_success", retrieval_id=result.retrieval_id, rationale="the build passes")
    print("feedback applied to %d record(s)" % fb.applied)

    # Errors are typed: the problem's fields, never the key.
    try:
        client.feedback("helped")
    except EngramError as e:
        print("refused: %d %s %s" % (e.status, e.title, [f.pointer for f in e.errors]))
    return result, fb


if __name__ == "__main__":
    run(Client(os.environ.get("ENGRAM_URL", "http://127.0.0.1:8080"), os.environ["ENGRAM_API_KEY"],
               actor="quickstart"),
        thread="task-" + uuid.uuid4().hex[:8])
