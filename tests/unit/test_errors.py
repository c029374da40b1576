"""One error table per surface, each naming every class of the error tree.

The tree is walked at run time (`errors.error_classes`), so a class added anywhere must be
added to every surface's table, and an error raised by the owner's REST API comes back to
its client as the same class.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from chromasync import action, errors, mcp, rest
from chromasync.cli import common
from chromasync.errors import ChromasyncError, error_classes
from chromasync.nats.errors import ERROR_KINDS as NATS_ERROR_KINDS
from chromasync.owner.client import OwnerClient
from chromasync.owner.locate import OwnerInfo

TABLES = {
    "cli exit codes": common.EXIT_CODES,
    "rest statuses": rest.ERROR_STATUS,
    "mcp error kinds": mcp.ERROR_KINDS,
    "nats error kinds": NATS_ERROR_KINDS,
}


def test_the_tree_is_documented_and_exported() -> None:
    classes = error_classes()
    assert len(classes) >= 8
    for cls in classes:
        if cls.__module__ == errors.__name__:
            assert cls.__name__ in errors.__all__
            assert cls.__name__ in (errors.__doc__ or "")


@pytest.mark.parametrize("surface", sorted(TABLES))
def test_every_class_is_in_every_table(surface: str) -> None:
    table: dict[Any, Any] = TABLES[surface]
    missing = [cls.__name__ for cls in error_classes() if cls not in table]
    assert not missing, f"{surface} lacks {missing}"


@pytest.mark.parametrize(
    ("cls", "code", "status"),
    [
        (errors.ConfigError, 2, 400),
        (errors.NotFound, 1, 404),
        (errors.AccessDenied, 1, 403),
        (errors.LockError, 1, 409),
        (errors.StoreError, 1, 503),
        (errors.ChromasyncError, 1, 500),
    ],
)
def test_tables_agree_with_the_docs(cls: type[ChromasyncError], code: int, status: int) -> None:
    assert common.exit_code(cls("x")) == code
    assert action.exit_code(cls("x")) == code
    assert rest.status_for(cls("x")) == status


class _Raising:
    """A service whose status raises the error under test (the REST app's only dependency
    on this route); everything between the raise and the client is the real code."""

    def __init__(self, exc: ChromasyncError) -> None:
        self.exc = exc

    def status(self) -> dict[str, Any]:
        raise self.exc


@pytest.mark.parametrize("cls", error_classes(), ids=lambda c: c.__name__)
def test_rest_errors_reach_the_client_as_the_same_class(cls: type[ChromasyncError]) -> None:
    app = rest.create_app(_Raising(cls("the message")), allowed_hosts=None)  # type: ignore[arg-type]
    owner = OwnerInfo(pid=1, role="serve", socket="/nonexistent")
    with TestClient(app, raise_server_exceptions=False) as http:
        client = OwnerClient(owner, http=http)
        with pytest.raises(ChromasyncError) as caught:
            client.status()
    assert type(caught.value) is cls
    assert "the message" in str(caught.value)


SECRET = "PassW0rdSecret"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"nats://alice:{SECRET}@h:4222, nats://h2:1", "nats://h:4222, nats://h2:1"),
        (f"GET https://bob:{SECRET}@x.example/v1?q=1 x", "GET https://x.example/v1?q=1 x"),
        (f"http://u:p@w@{SECRET}@host/p", "http://host/p"),  # an unescaped @ in the password
        ("mail me at a@b.example (no URL)", "mail me at a@b.example (no URL)"),
        # a password holding `#`, `/` or `?` unescaped was shown from that character on
        (f"http://u:pa#{SECRET}@h:1/v1 x", "http://h:1/v1 x"),
        (f"ChatClient('http://u:pa/{SECRET}@h:1/chat')", "ChatClient('http://h:1/chat')"),
        (f"nats://u:pa?{SECRET}@h:1,nats://v:{SECRET}@h2:2", "nats://h:1,nats://h2:2"),
        ("https://registry.example/@scope/pkg", "https://registry.example/@scope/pkg"),
        # a secret in the query string was shown as it is
        (f"http://h/v1?api_key={SECRET}&x=1", "http://h/v1?api_key=***&x=1"),
        (f'"http://h/?access_token={SECRET}",', '"http://h/?access_token=***",'),
        (f"http://h/?X-Amz-Signature={SECRET} ok", "http://h/?X-Amz-Signature=*** ok"),
    ],
)
def test_shown_url_leaves_out_user_info(text: str, shown: str) -> None:
    assert errors.shown_url(text) == shown


def test_messages_and_reprs_of_outbound_urls_leave_out_user_info(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from chromasync.answer.chat import ChatClient
    from chromasync.embed import shared
    from chromasync.embed.openai import OpenAIEmbedder

    embedder = OpenAIEmbedder(url=f"http://u:{SECRET}@127.0.0.1:9/v1", retry=None, timeout_s=1)
    chat = ChatClient(f"http://u:{SECRET}@127.0.0.1:9/v1", "m")
    assert SECRET not in repr(embedder) + repr(chat)
    with pytest.raises(errors.EmbeddingError) as failed:
        embedder.embed_documents(["x"])
    with pytest.raises(errors.EmbeddingError) as download:
        shared.download(tmp_path / "onnx", f"http://u:{SECRET}@127.0.0.1:9/a.tgz", timeout=1)
    for message in (str(failed.value), str(download.value)):
        assert SECRET not in message and "127.0.0.1:9" in message
    with pytest.raises(SystemExit), common.reported_errors():
        raise errors.StoreError(f"cannot reach http://u:{SECRET}@h:1")
    said = capsys.readouterr().err
    assert "cannot reach http://h:1" in said and SECRET not in said
