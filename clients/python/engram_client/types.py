"""The typed results of the engram API, as dataclasses.

Each mirrors a JSON shape of engram's Go package api (and the OpenAPI
document at /v1/openapi.json). Every class has from_dict, which takes the
decoded JSON; fields the server leaves out take their defaults, and fields
this version does not know are ignored, so a newer server does not break an
older client. A record's payload is left as a dict: its shape depends on
the record's type.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


def _list(v: Any) -> list:
    return list(v) if isinstance(v, list) else []


@dataclass
class FieldError:
    """FieldError is one field-level error of a problem: where and what."""

    message: str
    pointer: str = ""
    parameter: str = ""
    header: str = ""

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "FieldError":
        return cls(message=str(d.get("message", "")), pointer=d.get("pointer", ""),
                   parameter=d.get("parameter", ""), header=d.get("header", ""))


@dataclass
class StagedEvent:
    """StagedEvent is one event of POST /v1/events: its id, and whether it
    repeated an idempotency key already staged."""

    id: str
    duplicate: bool = False

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "StagedEvent":
        return cls(id=d["id"], duplicate=bool(d.get("duplicate", False)))


@dataclass
class StreamAck:
    """StreamAck acknowledges one line of POST /v1/events:stream: the event's
    id once it is durable, or the error that refused the line (a problem as
    a dict, and the line goes unstored while the stream goes on)."""

    line: int
    id: str = ""
    duplicate: bool = False
    error: Optional[Dict[str, Any]] = None

    @property
    def ok(self) -> bool:
        """ok is whether the line was staged."""
        return self.error is None and self.id != ""

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "StreamAck":
        return cls(line=int(d.get("line", 0)), id=d.get("id", ""),
                   duplicate=bool(d.get("duplicate", False)), error=d.get("error"))


@dataclass
class Source:
    """Source is one piece of a record's provenance."""

    kind: str
    ref: str
    hash: str = ""
    timestamp: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Source":
        return cls(kind=d.get("kind", ""), ref=d.get("ref", ""), hash=d.get("hash", ""),
                   timestamp=d.get("timestamp"))


@dataclass
class Provenance:
    """Provenance is where a record came from."""

    sources: List[Source] = field(default_factory=list)
    created_by: str = ""

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Provenance":
        return cls(sources=[Source.from_dict(s) for s in _list(d.get("sources"))],
                   created_by=d.get("created_by", ""))


@dataclass
class Record:
    """Record is a memory record (the substrate RFC's §15A envelope).
    payload is the type's payload as decoded JSON; lifecycle and relations
    are kept as decoded JSON too."""

    id: str
    type: str
    status: str
    version: int
    sensitivity: str
    confidence: float
    salience: float
    payload: Dict[str, Any]
    created_at: str
    updated_at: str
    tags: List[str] = field(default_factory=list)
    scope: str = ""
    visibility: str = ""
    agent_id: str = ""
    thread_id: str = ""
    provenance: Provenance = field(default_factory=Provenance)
    lifecycle: Dict[str, Any] = field(default_factory=dict)
    relations: List[Dict[str, Any]] = field(default_factory=list)
    flags: List[Dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Record":
        return cls(
            id=d["id"], type=d.get("type", ""), status=d.get("status", ""),
            version=int(d.get("version", 0)), sensitivity=d.get("sensitivity", ""),
            confidence=float(d.get("confidence", 0)), salience=float(d.get("salience", 0)),
            payload=d.get("payload") or {}, created_at=d.get("created_at", ""),
            updated_at=d.get("updated_at", ""), tags=_list(d.get("tags")), scope=d.get("scope", ""),
            visibility=d.get("visibility", ""), agent_id=d.get("agent_id", ""),
            thread_id=d.get("thread_id", ""), provenance=Provenance.from_dict(d.get("provenance") or {}),
            lifecycle=d.get("lifecycle") or {}, relations=_list(d.get("relations")),
            flags=_list(d.get("flags")),
        )


@dataclass
class RecordPage:
    """RecordPage is a page of GET /v1/records; next_cursor, when not empty,
    asks for the next page."""

    records: List[Record]
    next_cursor: str = ""

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "RecordPage":
        return cls(records=[Record.from_dict(r) for r in _list(d.get("records"))],
                   next_cursor=d.get("next_cursor", ""))


@dataclass
class Why:
    """Why explains an item's score: its parts and what matched."""

    relevance: float = 0.0
    salience: float = 0.0
    confidence: float = 0.0
    provenance: float = 0.0
    lexical: float = 0.0
    bm25: float = 0.0
    terms: List[str] = field(default_factory=list)
    vector: Optional[float] = None
    applicability: Optional[float] = None
    matched_conditions: List[str] = field(default_factory=list)
    unknown_conditions: List[str] = field(default_factory=list)
    matched_signal: str = ""
    signature_match: bool = False
    bindings: Dict[str, str] = field(default_factory=dict)
    success_rate: Optional[float] = None

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Why":
        return cls(
            relevance=float(d.get("relevance", 0)), salience=float(d.get("salience", 0)),
            confidence=float(d.get("confidence", 0)), provenance=float(d.get("provenance", 0)),
            lexical=float(d.get("lexical", 0)), bm25=float(d.get("bm25", 0)), terms=_list(d.get("terms")),
            vector=d.get("vector"), applicability=d.get("applicability"),
            matched_conditions=_list(d.get("matched_conditions")),
            unknown_conditions=_list(d.get("unknown_conditions")),
            matched_signal=d.get("matched_signal", ""), signature_match=bool(d.get("signature_match", False)),
            bindings=d.get("bindings") or {}, success_rate=d.get("success_rate"),
        )


@dataclass
class Item:
    """Item is one record a retrieval returned: the record (gated: as
    stored, summarised or redacted, as gating says), its score, token cost
    and the reasons."""

    record: Record
    score: float
    gating: str
    tokens: int
    why: Why

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Item":
        return cls(record=Record.from_dict(d["record"]), score=float(d.get("score", 0)),
                   gating=d.get("gating", ""), tokens=int(d.get("tokens", 0)),
                   why=Why.from_dict(d.get("why") or {}))


@dataclass
class Layer:
    """Layer is one layer of a retrieval (working, semantic, competence,
    plan, episodic), in the order of the substrate RFC's §15.8."""

    name: str
    items: List[Item] = field(default_factory=list)
    omitted: int = 0
    needs_disambiguation: bool = False
    separating_keys: List[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Layer":
        return cls(name=d.get("layer", ""), items=[Item.from_dict(i) for i in _list(d.get("items"))],
                   omitted=int(d.get("omitted", 0)), needs_disambiguation=bool(d.get("needs_disambiguation", False)),
                   separating_keys=_list(d.get("separating_keys")))


@dataclass
class BudgetUsage:
    """BudgetUsage is what a retrieval spent of its budget, and the limits."""

    items: int = 0
    tokens: int = 0
    items_limit: int = 0
    tokens_limit: int = 0

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "BudgetUsage":
        return cls(items=int(d.get("items", 0)), tokens=int(d.get("tokens", 0)),
                   items_limit=int(d.get("items_limit", 0)), tokens_limit=int(d.get("tokens_limit", 0)))


@dataclass
class RetrieveResult:
    """RetrieveResult is the answer of POST /v1/retrieve. retrieval_id is
    what feedback names; withheld counts what the trust context kept back."""

    retrieval_id: str
    clearance: str
    layers: List[Layer]
    withheld: int = 0
    lexical_only: bool = False
    notes: List[str] = field(default_factory=list)
    budget: BudgetUsage = field(default_factory=BudgetUsage)

    def items(self) -> List[Item]:
        """items is every layer's items, layer by layer."""
        return [i for layer in self.layers for i in layer.items]

    def layer(self, name: str) -> Optional[Layer]:
        """layer is the layer of that name, or None."""
        for l in self.layers:
            if l.name == name:
                return l
        return None

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "RetrieveResult":
        return cls(retrieval_id=d["retrieval_id"], clearance=d.get("clearance", ""),
                   layers=[Layer.from_dict(l) for l in _list(d.get("layers"))],
                   withheld=int(d.get("withheld", 0)), lexical_only=bool(d.get("lexical_only", False)),
                   notes=_list(d.get("notes")), budget=BudgetUsage.from_dict(d.get("budget") or {}))


@dataclass
class FeedbackRecord:
    """FeedbackRecord is a record feedback applied to: its new salience and
    version."""

    id: str
    salience: float
    version: int

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "FeedbackRecord":
        return cls(id=d["id"], salience=float(d.get("salience", 0)), version=int(d.get("version", 0)))


@dataclass
class FeedbackResult:
    """FeedbackResult is the answer of POST /v1/feedback: how many records
    the outcome applied to, and which were left because the feedback was
    already counted (duplicate) or the record is no longer live."""

    applied: int
    records: List[FeedbackRecord] = field(default_factory=list)
    duplicate: List[str] = field(default_factory=list)
    not_live: List[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "FeedbackResult":
        return cls(applied=int(d.get("applied", 0)),
                   records=[FeedbackRecord.from_dict(r) for r in _list(d.get("records"))],
                   duplicate=_list(d.get("duplicate")), not_live=_list(d.get("not_live")))
