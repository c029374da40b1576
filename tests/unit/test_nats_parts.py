"""The NATS surface's pure parts: what a message may carry, how a request becomes the search
every surface runs, how a hit is rendered, which source an event's file lies in, the waits."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.errors import ConfigError
from chromasync.nats.errors import BadMessage
from chromasync.nats.events import (
    place,
    reconnect_delay,
    redeliver_delay,
    subject_matches,
)
from chromasync.nats.payloads import (
    AskRequest,
    ChangeEvent,
    NatsFields,
    RetrieveRequest,
    collections_for,
    hit_reply,
    parse,
    search_args,
)
from chromasync.records import Hit

from ..doubling import assert_linear

MAX = 1024 * 1024


def refused(model: Any, data: bytes, max_bytes: int = MAX) -> str:
    with pytest.raises(BadMessage) as caught:
        parse(model, data, max_bytes)
    assert caught.value.message
    return caught.value.kind


def body(**fields: Any) -> bytes:
    return json.dumps({"client_id": "lens", "query": "grants", **fields}).encode()


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"{not json", "malformed_json"),
        (b"\xff\xfe", "malformed_json"),
        (b"[" * 50_000 + b"]" * 50_000, "malformed_json"),
        (b"[1, 2]", "invalid_request"),
        (b'"a string"', "invalid_request"),
        (body(bogus=1), "unknown_field"),
        (body(top_k=0), "invalid_request"),
        (body(top_k=1001), "invalid_request"),
        (body(top_k="8"), "invalid_request"),
        (body(include_chunks="no"), "invalid_request"),
        (body(tags="one"), "invalid_request"),
        (body(tags=["t"] * 65), "invalid_request"),
        (body(query="q" * 2001), "invalid_request"),
        (body(query=""), "invalid_request"),
        (body(funder_slug="f" * 1001), "invalid_request"),
        (body(published_after="x" * 65), "invalid_request"),
        (json.dumps({"query": "no client"}).encode(), "invalid_request"),
    ],
)
def test_bad_requests_are_refused_with_their_kind(data: bytes, kind: str) -> None:
    assert refused(RetrieveRequest, data) == kind


def test_a_message_over_the_bound_is_refused_before_it_is_parsed() -> None:
    ten_mb = b"{" * (10 * 1024 * 1024)
    began = time.perf_counter()
    assert refused(RetrieveRequest, ten_mb) == "too_large"
    assert time.perf_counter() - began < 0.5  # not parsed: a length check
    assert refused(ChangeEvent, ten_mb) == "too_large"


def test_a_request_with_every_field_parses() -> None:
    found = parse(
        RetrieveRequest,
        body(
            funder_slug="acme",
            record_uuid="u-1",
            published_after="2024-01-01",
            published_before="2025-01-01",
            pack_id="12",
            tags=["a", "b"],
            top_k=3,
            include_chunks=False,
        ),
        MAX,
    )
    assert (found.top_k, found.include_chunks, found.tags) == (3, False, ["a", "b"])
    assert parse(RetrieveRequest, body(), MAX).top_k == 8  # the design's default
    ask = parse(AskRequest, body(query="q" * 4000, fallback="extractive"), MAX)
    assert ask.fallback == "extractive"
    assert refused(AskRequest, body(query="q" * 4001)) == "invalid_request"
    assert refused(AskRequest, body(include_chunks=True)) == "unknown_field"


def test_events_name_files_and_may_carry_the_producers_own_fields() -> None:
    one = parse(ChangeEvent, json.dumps({"corpus_path": "a.md", "record_uuid": "u"}).encode(), MAX)
    assert one.paths == ("a.md",)
    many = parse(ChangeEvent, json.dumps({"corpus_paths": ["a.md", "b.md", "a.md"]}).encode(), MAX)
    assert many.paths == ("a.md", "b.md")
    assert refused(ChangeEvent, b'{"record_uuid": "u"}') == "invalid_request"
    assert refused(ChangeEvent, b'{"corpus_path": 7}') == "invalid_request"
    assert refused(ChangeEvent, json.dumps({"corpus_path": "p" * 4097}).encode()) == (
        "invalid_request"
    )


def test_request_fields_map_to_the_filters_on_the_configured_keys() -> None:
    fields = NatsFields.of({"funder_slug": "funder", "published_at": "issued"})
    request = parse(
        RetrieveRequest,
        body(funder_slug="acme", pack_id="12", published_after="2024-01-01", tags=["x"]),
        MAX,
    )
    args = search_args(request, fields, {})
    assert args.where_json == {
        "$and": [{"funder": "acme"}, {"$or": [{"pack_id": "12"}, {"pack_id": 12}]}]
    }
    assert (args.after, args.date_fields, args.tags, args.k) == (
        "2024-01-01",
        ("issued",),
        ("x",),
        8,
    )
    assert args.mode == "hybrid" and args.collections == ()
    settings = resolve_settings({"provider": "hash"}, {})
    built = api.search_request(args, settings)  # the one request every surface builds
    assert built.filters.after is not None and built.filters.date_fields == ("issued",)
    for name in ("published_after", "published_before"):  # named as the request spells it
        with pytest.raises(ConfigError, match=rf"^{name} takes a date") as caught:
            search_args(parse(RetrieveRequest, body(**{name: "soon"}), MAX), fields, {})
        assert "--after" not in str(caught.value) and "--before" not in str(caught.value)


def test_a_client_id_selects_its_collections() -> None:
    clients = {"lens": ("c-notes",), "*": ("c-all",)}
    assert collections_for("lens", clients) == ("c-notes",)
    assert collections_for("chat", clients) == ("c-all",)
    assert collections_for("anyone", {}) == ()
    with pytest.raises(BadMessage) as caught:
        collections_for("chat", {"lens": ("c-notes",)})
    assert caught.value.kind == "unknown_client"


def test_a_hit_is_rendered_in_the_reply_shape() -> None:
    hit = Hit(
        id="rid-0",
        path="grants/a.md",
        source="notes",
        heading="A",
        start_line=1,
        end_line=3,
        score=0.5,
        text="the text",
        metadata={
            "record_uuid": "u-1",
            "title": "T",
            "chunk_index": 2,
            "funder_slug": "acme",
            "record_id": "acme-2024-7",
        },
        relevance=0.8,
    )
    roots = {"notes": "/corpus/notes"}
    full = hit_reply(hit, NatsFields(), include_chunks=True, roots=roots, corpus_root="/corpus")
    assert full == {
        "record_uuid": "u-1",
        "corpus_path": "notes/grants/a.md",
        "title": "T",
        "published_at": None,
        "funder_slug": "acme",
        "chunk_index": 2,
        "chunk_text": "the text",
        "similarity": 0.8,
        "record_id": "acme-2024-7",  # the file's front matter, not chromasync's id (rid-0)
    }
    bare = hit_reply(hit, NatsFields(), include_chunks=False, roots=roots, corpus_root=None)
    assert "chunk_text" not in bare and bare["corpus_path"] == "/corpus/notes/grants/a.md"
    fields = NatsFields.of({"record_id": "grant_id"})
    renamed = hit_reply(hit, fields, include_chunks=False, roots=roots, corpus_root=None)
    assert renamed["record_id"] is None  # mapped as the others are: no such key, null


def test_events_are_placed_in_their_sources(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "inner").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (notes / "link").symlink_to(tmp_path / "elsewhere")
    roots = {"notes": str(notes), "inner": str(notes / "inner")}
    found = place(
        [
            str(notes / "a.md"),
            str(notes / "inner" / "b.md"),
            "notes/c.md",
            str(notes / ".." / "escape.md"),
            str(notes / "link" / "d.md"),
            "relative.md",
            "/nul\x00byte",
        ],
        roots,
        str(tmp_path),
        os.path.realpath,
    )
    assert found.labels == ("inner", "notes")
    assert found.outside == (
        str(notes / ".." / "escape.md"),
        str(notes / "link" / "d.md"),
        "relative.md",
        "/nul\x00byte",
    )
    none = place(["notes/a.md"], roots, None, os.path.realpath)
    assert none.labels == () and none.outside == ("notes/a.md",)


@pytest.mark.timing
def test_placing_is_linear() -> None:
    roots = {f"s{i}": f"/corpus/s{i}" for i in range(20)}
    paths = {n: [f"/corpus/s{i % 20}/f{i}.md" for i in range(n)] for n in (10_000, 20_000)}
    assert_linear(lambda n: place(paths[n], roots, None, lambda p: p), 10_000, what="2x paths")


def test_waits_double_and_are_capped() -> None:
    assert [reconnect_delay(n, 1.0) for n in (1, 2, 3, 4)] == [0.25, 0.5, 1.0, 2.0]
    assert [reconnect_delay(n, 0.0) for n in (1, 2)] == [0.125, 0.25]
    assert reconnect_delay(50, 0.99) <= 10.0
    assert [redeliver_delay(n) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert redeliver_delay(1000) == 60.0


@pytest.mark.parametrize(
    ("pattern", "subject", "covered"),
    [
        ("corpus.added", "corpus.added", True),
        ("corpus.*", "corpus.added", True),
        ("corpus.>", "corpus.retrieve.requested", True),
        ("corpus.*", "corpus.retrieve.requested", False),
        ("corpus.added", "corpus.removed", False),
        ("corpus.added.x", "corpus.added", False),
    ],
)
def test_stream_subjects_cover_event_subjects(pattern: str, subject: str, covered: bool) -> None:
    assert subject_matches(pattern, subject) is covered


def test_credentials_come_from_the_settings(tmp_path: Path) -> None:
    runner = pytest.importorskip("chromasync.nats.runner", reason="the nats extra is missing")
    settings = resolve_settings(
        {},
        {
            "CHROMASYNC_NATS_URL": "nats://u:pw@127.0.0.1:4222, nats://127.0.0.1:4223",
            "CHROMASYNC_NATS_TOKEN": "tok-1",
            "CHROMASYNC_NATS_USER": "cs",
            "CHROMASYNC_NATS_PASSWORD": "pw-2",
        },
    )
    options = runner.connect_options(settings)
    assert options["servers"] == ["nats://u:pw@127.0.0.1:4222", "nats://127.0.0.1:4223"]
    assert (options["token"], options["user"], options["password"]) == ("tok-1", "cs", "pw-2")
    assert runner.shown_url(settings.nats_url) == "nats://127.0.0.1:4222, nats://127.0.0.1:4223"
    assert "tok-1" not in repr(settings) and "pw-2" not in repr(settings)
    shown = dict((name, value) for name, value, _origin in settings.shown())
    assert shown["nats_token"] == shown["nats_password"] == "****** (set)"
    missing = resolve_settings({}, {"CHROMASYNC_NATS_CREDS": str(tmp_path / "none.creds")})
    with pytest.raises(ConfigError, match=r"none\.creds"):
        runner.connect_options(missing)
    creds = tmp_path / "user.creds"
    creds.write_text("-----BEGIN NATS USER JWT-----\n")
    found = resolve_settings({}, {"CHROMASYNC_NATS_CREDS": str(creds)})
    assert runner.connect_options(found)["user_credentials"] == str(creds)


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"CHROMASYNC_NATS_BATCH_S": "61"}, "CHROMASYNC_NATS_BATCH_S must be between 0 and 60"),
        ({"CHROMASYNC_NATS_MAX_MESSAGE_BYTES": "10"}, "CHROMASYNC_NATS_MAX_MESSAGE_BYTES"),
        ({"CHROMASYNC_NATS_BATCH_MAX": "x"}, "CHROMASYNC_NATS_BATCH_MAX must be a whole"),
        ({"CHROMASYNC_NATS_EVENT_SUBJECTS": "corpus.added,corpus.*"}, "'corpus.\\*'"),
        ({"CHROMASYNC_NATS_RETRIEVE_SUBJECT": "a..b"}, "not a NATS subject"),
        ({"CHROMASYNC_NATS_STREAM": "has space"}, "CHROMASYNC_NATS_STREAM must be 1-64"),
    ],
)
def test_nats_settings_out_of_range_are_config_errors(env: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        resolve_settings({}, env)


def test_the_config_files_nats_section(tmp_path: Path) -> None:
    from chromasync.config.file import load_config_file

    path = tmp_path / "chromasync.yaml"
    path.write_text(
        "version: 1\n"
        "nats:\n"
        "  url: nats://10.0.0.5:4222\n"
        "  user: cs\n"
        "  creds_file: keys/cs.creds\n"
        "  corpus_root: corpus\n"
        "  subjects: {events: [corpus.added], retrieve: rag.retrieve, ask: rag.ask}\n"
        "  fields: {funder_slug: funder}\n"
        "  clients: {lens: [chromasync-notes]}\n"
    )
    settings = resolve_settings({}, {}, load_config_file(path))
    assert settings.nats_url == "nats://10.0.0.5:4222" and settings.nats_user == "cs"
    assert settings.nats_creds == str(tmp_path / "keys" / "cs.creds")
    assert settings.nats_corpus_root == str(tmp_path / "corpus")
    assert settings.nats_event_subjects == "corpus.added"
    assert (settings.nats_retrieve_subject, settings.nats_ask_subject) == (
        "rag.retrieve",
        "rag.ask",
    )
    assert settings.nats_fields == {"funder_slug": "funder"}
    assert settings.nats_clients == {"lens": ["chromasync-notes"]}
    assert settings.origins["nats_url"].endswith("chromasync.yaml:3")

    for bad, needle in (
        ("nats:\n  token: abc\n", "CHROMASYNC_NATS_TOKEN"),
        ("nats:\n  password: abc\n", "CHROMASYNC_NATS_PASSWORD"),
        ("nats:\n  subjects: {retrieve: 'corpus.*'}\n", "retrieve"),
    ):
        path.write_text("version: 1\n" + bad)
        with pytest.raises(ConfigError, match=needle) as caught:
            resolve_settings({}, {}, load_config_file(path))
        assert "abc" not in str(caught.value)


def test_the_field_and_client_maps_are_checked() -> None:
    from chromasync.nats.payloads import clients_of

    assert NatsFields.of({"title": "name"}).title == "name"
    with pytest.raises(ConfigError, match="'funder' is not a request field"):
        NatsFields.of({"funder": "x"})
    with pytest.raises(ConfigError, match=r"nats\.fields\.title must be a metadata key"):
        NatsFields.of({"title": 3})
    assert clients_of({"lens": ["a", "b"], "*": "c"}) == {"lens": ("a", "b"), "*": ("c",)}
    with pytest.raises(ConfigError, match=r"nats\.clients\.lens"):
        clients_of({"lens": [1]})
