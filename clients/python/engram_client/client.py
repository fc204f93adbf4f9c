"""The engram client: one Client per API key, typed results, EngramError."""

import http.client
import json
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

from .types import FeedbackResult, FieldError, Record, RecordPage, RetrieveResult, StagedEvent, StreamAck

Event = Mapping[str, Any]

_KNOWN = ("type", "title", "status", "detail", "instance", "errors")


class EngramError(Exception):
    """EngramError is an error answer of engram: its application/problem+json
    body (RFC 9457) as fields. status is the HTTP status (0 when no answer
    came: the connection failed); type, title and detail say what went
    wrong; errors are the field-level errors; extra holds the problem's other
    members (gate, reason, rule, holder, record_ids, ...); retry_after is the
    Retry-After header's seconds, when sent. It never holds the API key."""

    def __init__(self, status: int, type: str = "about:blank", title: str = "", detail: str = "",
                 instance: str = "", errors: Optional[List[FieldError]] = None,
                 extra: Optional[Dict[str, Any]] = None, retry_after: Optional[int] = None):
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.instance = instance
        self.errors = errors or []
        self.extra = extra or {}
        self.retry_after = retry_after
        msg = "%d %s" % (status, title) if status else title
        if detail:
            msg += ": " + detail
        super().__init__(msg)

    @classmethod
    def from_problem(cls, status: int, body: Dict[str, Any], retry_after: Optional[int] = None) -> "EngramError":
        """from_problem makes the error of a decoded problem+json body."""
        return cls(
            status=int(body.get("status") or status), type=str(body.get("type", "about:blank")),
            title=str(body.get("title", "")), detail=str(body.get("detail", "")),
            instance=str(body.get("instance", "")),
            errors=[FieldError.from_dict(e) for e in body.get("errors") or [] if isinstance(e, dict)],
            extra={k: v for k, v in body.items() if k not in _KNOWN}, retry_after=retry_after,
        )


class Client:
    """Client speaks to one engramd as one API key.

    base_url is the daemon's address (http://127.0.0.1:8080); api_key is
    sent as Authorization: Bearer and appears nowhere else (not in errors,
    not in repr). actor names who acts (X-Engram-Actor, recorded in audit);
    session names the session whose write budget writes count against
    (X-Engram-Session). timeout, in seconds, bounds each request but a
    stream's (see stream_events).
    """

    def __init__(self, base_url: str, api_key: str, *, actor: Optional[str] = None,
                 session: Optional[str] = None, timeout: float = 30.0):
        if not api_key:
            raise ValueError("api_key is empty")
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise ValueError("base_url must be an http or https URL, such as http://127.0.0.1:8080")
        self.base_url = base_url.rstrip("/")
        self._key = api_key
        self.actor = actor
        self.session = session
        self.timeout = timeout

    def __repr__(self) -> str:
        return "Client(%r, actor=%r, session=%r)" % (self.base_url, self.actor, self.session)

    # -- events -----------------------------------------------------------

    def post_events(self, events: Sequence[Event]) -> List[StagedEvent]:
        """post_events stages a batch of events (POST /v1/events); when it
        returns, every event is durable. A bad event fails the whole batch
        with an EngramError whose errors point at it (/3/kind)."""
        out = self._do("POST", "/v1/events", body=list(events))
        return [StagedEvent.from_dict(e) for e in out.get("events") or []]

    def stream_events(self, events: Iterable[Event], *, timeout: Optional[float] = None,
                      lines_per_chunk: int = 64) -> Iterator[StreamAck]:
        """stream_events sends events as NDJSON over one request (POST
        /v1/events:stream) and yields an acknowledgement per line, in line
        order, as the daemon makes each batch durable; events may be a
        generator that yields as the agent works. Over http, sending and
        reading overlap (a thread sends), so a long stream does not fill the
        connection's buffers; over https the events are sent first and the
        acknowledgements read after, so send long https streams in parts. A bad line is acknowledged with its error and
        the stream goes on. timeout bounds the wait for an acknowledgement
        (None: no bound, since events may come slowly). Leaving the loop
        early closes the stream; lines not yet acknowledged may or may not
        have been staged (send an idempotency_key to make a resend safe)."""
        u = urllib.parse.urlsplit(self.base_url + "/v1/events:stream")
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        conn = cls(u.netloc, timeout=self.timeout)
        failed: List[BaseException] = []
        try:
            conn.putrequest("POST", u.path, skip_accept_encoding=True)
            for k, v in self._headers().items():
                conn.putheader(k, v)
            conn.putheader("Content-Type", "application/x-ndjson")
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            # The sender writes to the socket itself: http.client would
            # open a new connection to send on once a response said
            # Connection: close.
            sock = conn.sock
            sock.settimeout(timeout)
        except OSError as e:
            conn.close()
            raise self._connection_error(e) from None

        def send() -> None:
            try:
                buf: List[bytes] = []
                for ev in events:
                    buf.append(json.dumps(ev, separators=(",", ":")).encode("utf-8") + b"\n")
                    if len(buf) >= lines_per_chunk:
                        _chunk(sock, b"".join(buf))
                        buf = []
                if buf:
                    _chunk(sock, b"".join(buf))
                sock.sendall(b"0\r\n\r\n")
            except BaseException as e:  # the reader raises it
                failed.append(e)
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        sender = threading.Thread(target=send, name="engram-stream", daemon=True)
        if u.scheme == "https":
            # One TLS connection is not read and written from two threads
            # at once: over https the events are sent first, then the
            # acknowledgements read.
            send()
        else:
            sender.start()
        try:
            try:
                resp = conn.getresponse()
            except OSError as e:
                if failed and not isinstance(failed[0], OSError):
                    raise failed[0]
                raise self._connection_error(e) from None
            if resp.status != 200:
                raise self._error(resp.status, resp.getheader("Content-Type", ""), resp.read(),
                                  resp.getheader("Retry-After"))
            for line in resp:
                line = line.strip()
                if line:
                    yield StreamAck.from_dict(json.loads(line))
            if sender.is_alive():
                sender.join()
            if failed:
                raise failed[0]
        finally:
            conn.close()
            if sender.is_alive():
                sender.join(timeout=5)

    # -- retrieval and feedback -------------------------------------------

    def retrieve(self, task: Union[str, Mapping[str, Any]], *, trust: Optional[Mapping[str, Any]] = None,
                 budget: Optional[Mapping[str, Any]] = None) -> RetrieveResult:
        """retrieve recalls what helps with a task (POST /v1/retrieve),
        layer by layer. task is the task descriptor (text, intent, signals,
        tools, conditions, thread_id, agent_id, scope) or just its text;
        trust is the trust context (clearance, authenticated, environment);
        budget bounds items, tokens and items per layer."""
        body: Dict[str, Any] = {"task": {"text": task} if isinstance(task, str) else dict(task)}
        if trust:
            body["trust"] = dict(trust)
        if budget:
            body["budget"] = dict(budget)
        return RetrieveResult.from_dict(self._do("POST", "/v1/retrieve", body=body))

    recall = retrieve

    def feedback(self, outcome: str, *, retrieval_id: Optional[str] = None,
                 record_ids: Optional[Sequence[str]] = None, key: Optional[str] = None,
                 rationale: Optional[str] = None,
                 evidence: Optional[Sequence[Mapping[str, Any]]] = None) -> FeedbackResult:
        """feedback reports how recalled records served (POST /v1/feedback):
        outcome is used_success, used_failure or unused. With retrieval_id
        it applies to that retrieval's records (or to record_ids among
        them); without, record_ids names the records and key is the
        idempotency key. It counts once per (retrieval or key, record)."""
        body: Dict[str, Any] = {"outcome": outcome}
        if retrieval_id:
            body["retrieval_id"] = retrieval_id
        if record_ids is not None:
            body["record_ids"] = list(record_ids)
        if key:
            body["key"] = key
        if rationale:
            body["rationale"] = rationale
        if evidence:
            body["evidence"] = [dict(e) for e in evidence]
        return FeedbackResult.from_dict(self._do("POST", "/v1/feedback", body=body))

    # -- records ----------------------------------------------------------

    def get_record(self, record_id: str, *, as_of: Optional[str] = None) -> Record:
        """get_record reads a record (GET /v1/records/{id}), as it is or as
        it was at as_of (RFC 3339)."""
        q = {"as_of": as_of} if as_of else None
        return Record.from_dict(self._do("GET", "/v1/records/" + _seg(record_id), query=q))

    def list_records(self, *, type: Optional[str] = None, status: Optional[str] = None,
                     tag: Optional[str] = None, scope: Optional[str] = None, subject: Optional[str] = None,
                     predicate: Optional[str] = None, limit: Optional[int] = None,
                     cursor: Optional[str] = None, as_of: Optional[str] = None) -> RecordPage:
        """list_records lists records a page at a time (GET /v1/records);
        type, status and tag take comma-separated values. Pass the page's
        next_cursor as cursor for the next."""
        q = {"type": type, "status": status, "tag": tag, "scope": scope, "subject": subject,
             "predicate": predicate, "limit": limit, "cursor": cursor, "as_of": as_of}
        return RecordPage.from_dict(self._do("GET", "/v1/records", query=q))

    def create_record(self, record: Mapping[str, Any], *, rationale: Optional[str] = None) -> Record:
        """create_record writes a record through the write path (POST
        /v1/records) and returns it as stored: the new record, or the live
        one it duplicates."""
        q = {"rationale": rationale} if rationale else None
        return Record.from_dict(self._do("POST", "/v1/records", body=dict(record), query=q))

    # -- plumbing ---------------------------------------------------------

    def _headers(self) -> Dict[str, str]:
        h = {"Authorization": "Bearer " + self._key, "Accept": "application/json",
             "User-Agent": "engram-client-python/0.1"}
        if self.actor:
            h["X-Engram-Actor"] = self.actor
        if self.session:
            h["X-Engram-Session"] = self.session
        return h

    def _do(self, method: str, path: str, *, body: Any = None,
            query: Optional[Mapping[str, Any]] = None) -> Any:
        url = self.base_url + path
        if query:
            q = [(k, str(v)) for k, v in query.items() if v is not None]
            if q:
                url += "?" + urllib.parse.urlencode(q)
        data = None
        headers = self._headers()
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            with e:
                raise self._error(e.code, e.headers.get("Content-Type", ""), e.read(),
                                  e.headers.get("Retry-After")) from None
        except (urllib.error.URLError, OSError) as e:
            raise self._connection_error(e) from None
        return json.loads(raw) if raw else None

    def _error(self, status: int, ctype: str, raw: bytes, retry_after: Optional[str]) -> EngramError:
        ra = int(retry_after) if retry_after and retry_after.isdigit() else None
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if isinstance(body, dict) and ("title" in body or "type" in body):
            err = EngramError.from_problem(status, body, ra)
        else:
            err = EngramError(status, title=http.client.responses.get(status, "HTTP error"),
                              detail=raw[:200].decode("utf-8", "replace"), retry_after=ra)
        err.detail = self._scrub(err.detail)
        return err

    def _connection_error(self, e: BaseException) -> EngramError:
        reason = getattr(e, "reason", e)
        return EngramError(0, type="about:blank", title="engramd unreachable",
                           detail=self._scrub("%s: %s" % (self.base_url, reason)))

    def _scrub(self, s: str) -> str:
        return s.replace(self._key, "[REDACTED]") if self._key else s


def _chunk(sock: socket.socket, data: bytes) -> None:
    sock.sendall(b"%x\r\n" % len(data) + data + b"\r\n")


def _seg(s: str) -> str:
    return urllib.parse.quote(str(s), safe="")
