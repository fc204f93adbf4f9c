"""Tests of engram_client against a live engramd.

They need ENGRAM_TEST_URL (http://127.0.0.1:8080) and ENGRAM_TEST_API_KEY (a
tenant key) and are skipped without them; `make test` runs them against a
daemon of its own (cmd/engramd/pyclient_test.go).
"""

import contextlib
import importlib.util
import io
import os
import socket
import subprocess
import sys
import unittest
import uuid

from engram_client import Client, EngramError, Record, RetrieveResult, StreamAck

URL = os.environ.get("ENGRAM_TEST_URL", "")
KEY = os.environ.get("ENGRAM_TEST_API_KEY", "")
HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "quickstart.py")


def setUpModule():
    if not URL or not KEY:
        raise unittest.SkipTest("ENGRAM_TEST_URL and ENGRAM_TEST_API_KEY are not set: no engramd to test against")


def uniq(prefix: str) -> str:
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


def fact(subject: str, obj: str = "go", predicate: str = "prefers_language") -> dict:
    return {"type": "semantic", "confidence": 0.9,
            "payload": {"kind": "semantic", "subject": subject, "predicate": predicate,
                        "object": obj, "validity": {"mode": "global"}}}


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.c = Client(URL, KEY, actor="pytest", session=uniq("s"))

    def assertNoKey(self, e: EngramError):
        for text in (str(e), repr(e), repr(e.args), repr(vars(e))):
            self.assertNotIn(KEY, text)

    def test_post_events_batch_is_idempotent(self):
        thread = uniq("t")
        evs = [{"kind": "user_input", "agent_id": "py", "thread_id": thread, "text": "hello",
                "idempotency_key": thread + "-1"},
               {"kind": "observation", "agent_id": "py", "thread_id": thread, "text": "world",
                "idempotency_key": thread + "-2"}]
        first = self.c.post_events(evs)
        self.assertEqual(len(first), 2)
        self.assertFalse(any(e.duplicate for e in first))
        again = self.c.post_events(evs)
        self.assertEqual([e.id for e in again], [e.id for e in first])
        self.assertTrue(all(e.duplicate for e in again))

    def test_post_events_refused_with_field_errors(self):
        with self.assertRaises(EngramError) as cm:
            self.c.post_events([{"kind": "user_input", "agent_id": "py", "thread_id": "t", "text": "ok"},
                                {"kind": "nope", "agent_id": "py", "thread_id": "t"}])
        e = cm.exception
        self.assertEqual(e.status, 422)
        self.assertTrue(e.type.startswith("urn:engram:problem:"), e.type)
        self.assertIn("/1/kind", [f.pointer for f in e.errors])
        self.assertNoKey(e)

    def test_stream_events_acknowledges_each_line_in_order(self):
        thread = uniq("t")

        def events():  # a generator, as an agent would yield them
            for i in range(1500):
                if i == 700:
                    yield {"kind": "observation"}  # no agent_id, thread_id: refused, the stream goes on
                else:
                    yield {"kind": "observation", "agent_id": "py", "thread_id": thread, "text": "step %d" % i}

        acks = list(self.c.stream_events(events()))
        self.assertEqual([a.line for a in acks], list(range(1, 1501)))
        bad = [a for a in acks if not a.ok]
        self.assertEqual([a.line for a in bad], [701])
        self.assertEqual(bad[0].error["status"], 422)
        self.assertEqual(len({a.id for a in acks if a.ok}), 1499)

    def test_stream_events_unauthorized(self):
        c = Client(URL, "not-a-key-0123456789abcdef")
        with self.assertRaises(EngramError) as cm:
            list(c.stream_events([{"kind": "observation", "agent_id": "py", "thread_id": "t", "text": "x"}]))
        self.assertEqual(cm.exception.status, 401)
        self.assertNotIn("not-a-key-0123456789abcdef", str(cm.exception))

    def test_stream_events_iterator_error_is_raised(self):
        def events():
            yield {"kind": "observation", "agent_id": "py", "thread_id": uniq("t"), "text": "x"}
            raise RuntimeError("the agent crashed")

        with self.assertRaises(RuntimeError):
            list(self.c.stream_events(events()))

    def test_unauthorized_never_shows_the_key(self):
        bad = "wrong-key-" + uuid.uuid4().hex
        c = Client(URL, bad)
        with self.assertRaises(EngramError) as cm:
            c.list_records()
        e = cm.exception
        self.assertEqual((e.status, e.type), (401, "urn:engram:problem:unauthorized"))
        self.assertNotIn(bad, str(e) + repr(vars(e)))
        self.assertNotIn(bad, repr(c))

    def test_records_create_get_list(self):
        subject = uniq("user")
        rec = self.c.create_record(fact(subject), rationale="stated by the user")
        self.assertIsInstance(rec, Record)
        self.assertEqual((rec.type, rec.status, rec.version), ("semantic", "active", 1))
        self.assertEqual(rec.payload["object"], "go")
        got = self.c.get_record(rec.id)
        self.assertEqual((got.id, got.payload["subject"], got.confidence), (rec.id, subject, 0.9))
        page = self.c.list_records(type="semantic", subject=subject)
        self.assertEqual([r.id for r in page.records], [rec.id])
        self.assertEqual(page.next_cursor, "")

    def test_records_paging(self):
        subject = uniq("paged")
        ids = {self.c.create_record(fact(subject, "yes", p)).id for p in ("uses_go", "uses_rust", "uses_zig")}
        seen, cursor = [], None
        while True:
            page = self.c.list_records(subject=subject, limit=2, cursor=cursor)
            self.assertLessEqual(len(page.records), 2)
            seen += [r.id for r in page.records]
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        self.assertEqual(set(seen), ids)
        self.assertEqual(len(seen), 3)

    def test_record_invalid_and_missing(self):
        with self.assertRaises(EngramError) as cm:
            self.c.create_record({"type": "semantic", "confidence": 2, "payload": {"kind": "semantic"}})
        e = cm.exception
        self.assertEqual(e.status, 422)
        self.assertEqual(sorted(f.pointer for f in e.errors),
                         ["/confidence", "/payload/object", "/payload/predicate", "/payload/subject", "/payload/validity"])
        self.assertNoKey(e)
        with self.assertRaises(EngramError) as cm:
            self.c.get_record(str(uuid.uuid4()))
        self.assertEqual((cm.exception.status, cm.exception.type), (404, "urn:engram:problem:not-found"))
        with self.assertRaises(EngramError) as cm:
            self.c.list_records(type="nope")
        self.assertEqual(cm.exception.status, 400)
        self.assertEqual([f.parameter for f in cm.exception.errors], ["type"])

    def test_retrieve_then_feedback(self):
        subject = uniq("pyuser")
        rec = self.c.create_record(fact(subject, "haskell"))
        res = self.c.retrieve({"text": "%s prefers_language haskell" % subject},
                              trust={"clearance": "medium"}, budget={"items": 5})
        self.assertIsInstance(res, RetrieveResult)
        self.assertTrue(res.retrieval_id)
        self.assertEqual(res.clearance, "medium")
        semantic = res.layer("semantic")
        self.assertIsNotNone(semantic)
        item = next(i for i in semantic.items if i.record.id == rec.id)
        self.assertEqual(item.gating, "return")
        self.assertGreater(item.score, 0)
        self.assertGreater(item.why.relevance, 0)
        self.assertLessEqual(res.budget.items, res.budget.items_limit)

        fb = self.c.feedback("used_failure", retrieval_id=res.retrieval_id, record_ids=[rec.id])
        self.assertEqual(fb.applied, 1)
        self.assertEqual([r.id for r in fb.records], [rec.id])
        self.assertLess(fb.records[0].salience, 1)
        again = self.c.feedback("used_failure", retrieval_id=res.retrieval_id, record_ids=[rec.id])
        self.assertEqual((again.applied, again.duplicate), (0, [rec.id]))

    def test_feedback_refused(self):
        with self.assertRaises(EngramError) as cm:
            self.c.feedback("helped")
        self.assertEqual(cm.exception.status, 422)
        self.assertIn("/outcome", [f.pointer for f in cm.exception.errors])

    def test_connection_error(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        c = Client("http://127.0.0.1:%d" % port, KEY, timeout=5)
        with self.assertRaises(EngramError) as cm:
            c.list_records()
        self.assertEqual(cm.exception.status, 0)
        self.assertNoKey(cm.exception)

    def test_readme_example(self):
        """The README's example, run as a module: streams, recalls, feeds back."""
        spec = importlib.util.spec_from_file_location("quickstart", EXAMPLE)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            res, fb = mod.run(self.c, thread=uniq("task"))
        self.assertTrue(res.items(), out.getvalue())
        self.assertEqual(fb.applied, len(res.items()))
        self.assertEqual({r.id for r in fb.records}, {i.record.id for i in res.items()})
        text = out.getvalue()
        self.assertEqual(text.count("staged as event"), 4)
        self.assertIn("refused: 422 Validation failed", text)

    def test_readme_example_as_a_script(self):
        env = dict(os.environ, ENGRAM_URL=URL, ENGRAM_API_KEY=KEY)
        p = subprocess.run([sys.executable, EXAMPLE], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"feedback applied to [1-9]\d* record")


if __name__ == "__main__":
    unittest.main()
