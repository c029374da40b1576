"""`chromasync ask` on every surface: the CLI (CliRunner), REST `/ask` and its server-sent
events, the owner client, with a real local chat server or without one (extractive)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from chromasync import api
from chromasync.cli.main import main
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.owner.client import OwnerClient
from chromasync.owner.service import Service
from chromasync.rest import create_app
from tests.chat_server import ChatServer, Reply

KEY = "sk-ask-test-5b1e77c0"
QUESTION = "How do I calibrate the espresso grinder burrs?"


def run(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, args, env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def indexed(
    notes: Path, settings: Settings, embedder: HashEmbedder, cli_env: dict[str, str]
) -> dict[str, str]:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    return {**cli_env, "CHROMASYNC_LLM_URL": "", "CHROMASYNC_LLM_API_KEY": "", "OPENAI_API_KEY": ""}


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with ChatServer(api_key=KEY) as server:
        yield server


def llm_env(env: dict[str, str], chat: ChatServer) -> dict[str, str]:
    return {
        **env,
        "CHROMASYNC_LLM_URL": chat.url,
        "CHROMASYNC_LLM_MODEL": "test-chat",
        "CHROMASYNC_LLM_API_KEY": KEY,
        "CHROMASYNC_LLM_RETRIES": "2",
    }


# -- CLI -------------------------------------------------------------------------------------


def test_cli_extractive_answer_cites_the_lines(indexed: dict[str, str]) -> None:
    code, out, err = run(["ask", QUESTION, "--k", "5"], indexed)
    assert code == 0, err
    answer, _, sources = out.partition("\nSources:\n")
    assert "burrs" in answer and "[1]" in answer
    first = sources.splitlines()[0]
    assert first.startswith("[1] guides/install.md:") and first.endswith(
        "(Installing the espresso grinder)"
    )
    # the cited line really holds the quoted words
    code, out, err = run(["ask", QUESTION, "--k", "5", "--json"], indexed)
    data = json.loads(out)
    assert code == 0 and data["mode"] == "extractive" and data["model"] is None
    cited = data["citations"][0]
    assert set(cited) >= {"n", "id", "path", "heading", "start_line", "end_line", "quote"}
    assert data["sources"][0] == f"{cited['path']}:{cited['start_line']}" or data["sources"][0] == (
        f"{cited['path']}:{cited['start_line']}-{cited['end_line']}"
    )
    lines = (Path(indexed["CHROMASYNC_DATA_DIR"]).parent / "notes" / cited["path"]).read_text()
    span = lines.splitlines()[cited["start_line"] - 1 : cited["end_line"]]
    assert cited["quote"].split()[0] in " ".join(span)


def test_cli_takes_the_search_filters(indexed: dict[str, str]) -> None:
    code, out, err = run(["ask", "what should I do?", "--tag", "baking", "--json"], indexed)
    assert code == 0, err
    paths = {c["path"] for c in json.loads(out)["citations"]}
    assert paths == {"guides/sourdough.md"}


def test_cli_no_match_is_a_clear_answer(indexed: dict[str, str]) -> None:
    code, out, err = run(["ask", QUESTION, "--where", "rating=99"], indexed)
    assert code == 0, err
    assert out.strip() == "No sources matched these filters."
    # a label no source has is a typo, not an empty answer (issue 29)
    code, out, err = run(["ask", QUESTION, "--source", "nots"], indexed)
    assert code == 1 and "did you mean 'notes'" in err and out == ""
    code, out, _ = run(["ask", QUESTION, "--tag", "no-such-tag", "--json"], indexed)
    data = json.loads(out)
    assert code == 0 and data["flags"] == ["no-sources"] and data["citations"] == []


@pytest.mark.parametrize(
    ("question", "words"), [("", "empty"), ("   ", "empty"), ("x" * 100_000, "100000 characters")]
)
def test_cli_bad_questions_are_usage_errors(
    indexed: dict[str, str], question: str, words: str
) -> None:
    code, out, err = run(["ask", question], indexed)
    assert code == 2 and out == ""
    assert words in err and "Traceback" not in err


def test_cli_streams_the_model_answer_with_sources(
    indexed: dict[str, str], chat: ChatServer
) -> None:
    chat.default = Reply("Turn the ring until the burrs touch, then back off [1]. Done [2].")
    code, out, err = run(["ask", QUESTION, "--k", "3"], llm_env(indexed, chat))
    assert code == 0, err
    assert out.startswith("Turn the ring until the burrs touch, then back off [1]. Done [2].")
    assert "\nSources:\n[1] " in out and "\n[2] " in out
    assert "asking" in err and KEY not in err + out
    request = chat.requests[-1]
    assert request["stream"] is True and request["model"] == "test-chat"
    assert "Calibration" in request["messages"][1]["content"]
    assert chat.auth_headers[-1] == f"Bearer {KEY}"


@pytest.mark.parametrize("as_json", [False, True])
def test_cli_an_answer_cut_off_before_done_exits_1(
    indexed: dict[str, str], chat: ChatServer, as_json: bool
) -> None:
    """The stream ends mid-sentence without `[DONE]`: what came is printed, flagged
    `incomplete`, and the exit status is 1 (it was 0, with no flag)."""
    chat.default = Reply("Turn the ring until the burrs touch [1]. Then", no_done=True)
    args = ["ask", QUESTION, "--k", "3"] + (["--json"] if as_json else [])
    code, out, err = run(args, llm_env(indexed, chat))
    assert code == 1, err
    if as_json:
        data = json.loads(out)
        assert "incomplete" in data["flags"] and data["answer"].startswith("Turn the ring")
    else:
        assert out.startswith("Turn the ring until the burrs touch [1]. Then")
        assert "incomplete" in err and "Traceback" not in err


def test_cli_json_with_the_model_removes_unknown_citations(
    indexed: dict[str, str], chat: ChatServer
) -> None:
    chat.default = Reply("The burrs are set at the zero point [1][9].")
    code, out, err = run(["ask", QUESTION, "--k", "3", "--json"], llm_env(indexed, chat))
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "llm" and data["model"] == "test-chat"
    assert data["answer"] == "The burrs are set at the zero point [1]."
    assert data["removed_citations"] == 1 and "removed-citations" in data["flags"]
    assert data["usage"]["total_tokens"] == 49


def test_cli_flags_override_the_environment(indexed: dict[str, str], chat: ChatServer) -> None:
    env = {**indexed, "CHROMASYNC_LLM_URL": "http://127.0.0.1:9/v1", "CHROMASYNC_LLM_API_KEY": KEY}
    args = ["ask", QUESTION, "--json", "--llm-url", chat.url, "--llm-model", "flag-model"]
    code, out, err = run(args, env)
    assert code == 0, err
    assert chat.requests[-1]["model"] == "flag-model" and json.loads(out)["model"] == "test-chat"


def test_cli_unreachable_model_names_the_url_not_the_key(indexed: dict[str, str]) -> None:
    env = {
        **indexed,
        "CHROMASYNC_LLM_URL": "http://127.0.0.1:9/v1",
        "CHROMASYNC_LLM_MODEL": "m",
        "CHROMASYNC_LLM_API_KEY": KEY,
        "CHROMASYNC_LLM_RETRIES": "1",
    }
    code, out, err = run(["ask", QUESTION], env)
    assert code == 1 and out == ""
    assert "http://127.0.0.1:9/v1/chat/completions" in err and KEY not in err
    code, out, err = run(["ask", QUESTION, "--fallback", "extractive", "--json"], env)
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "extractive" and "llm-unreachable" in data["flags"]
    assert data["citations"] and KEY not in out + err


def test_cli_refused_key_is_a_failure(indexed: dict[str, str], chat: ChatServer) -> None:
    env = {**llm_env(indexed, chat), "CHROMASYNC_LLM_API_KEY": "sk-wrong-1234567"}
    code, out, err = run(["ask", QUESTION], env)
    assert code == 1 and out == ""
    assert "refused" in err and "sk-wrong-1234567" not in err


def test_cli_group_by_answers_per_group(indexed: dict[str, str]) -> None:
    # every hit (a floor of 0): without one, groups take only the relevant hits (issue 39)
    argv = ["ask", "notes", "--k", "20", "--group-by", "path", "--min-score", "0", "--json"]
    code, out, err = run(argv, indexed)
    assert code == 0, err
    data = json.loads(out)
    assert data["group_by"] == "path" and len(data["groups"]) >= 2
    numbers = {c["n"] for c in data["citations"]}
    for group in data["groups"]:
        assert set(group["citations"]) <= numbers and f"path: {group['value']}" in data["answer"]


# -- REST and the owner client -------------------------------------------------------------------


@pytest.fixture
def service(notes: Path, settings: Settings, embedder: HashEmbedder) -> Iterator[Service]:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    with Service(settings, "serve", embedder=embedder) as svc:
        yield svc


@pytest.fixture
def rest(service: Service) -> Iterator[TestClient]:
    with TestClient(create_app(service), base_url="http://127.0.0.1") as c:
        yield c


def with_llm(service: Service, chat: ChatServer, **more: object) -> None:
    import dataclasses

    service.settings = dataclasses.replace(
        service.settings,
        llm_url=chat.url,
        llm_model="test-chat",
        llm_api_key=KEY,
        llm_retries=1,
        **more,
    )


def test_rest_ask_extractive_and_filters(rest: TestClient) -> None:
    response = rest.post("/ask", json={"question": QUESTION, "k": 5})
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["mode"] == "extractive" and data["citations"][0]["source"] == "notes"
    assert data["citations"][0]["path"] == "guides/install.md"
    response = rest.post("/ask", json={"question": QUESTION, "tags": ["no-such-tag"]})
    assert response.status_code == 200
    assert response.json()["answer"] == "No sources matched these filters."


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"question": ""}, 400),
        ({"question": "x" * 100_000}, 400),
        ({"question": QUESTION, "k": 0}, 422),
        ({"question": QUESTION, "surprise": 1}, 422),
        ({"question": QUESTION, "where_json": "{not json"}, 400),
    ],
)
def test_rest_ask_bad_input(rest: TestClient, body: dict[str, object], status: int) -> None:
    response = rest.post("/ask", json=body)
    assert response.status_code == status, response.text
    assert "Traceback" not in response.text


def test_rest_ask_takes_json_only(rest: TestClient) -> None:
    response = rest.post(
        "/ask", content=f"question={QUESTION}", headers={"Content-Type": "text/plain"}
    )
    assert response.status_code == 415  # every write route: application/json only
    assert rest.post("/ask", json=[QUESTION]).status_code == 422  # and a JSON object


def test_rest_ask_with_the_model(rest: TestClient, service: Service, chat: ChatServer) -> None:
    with_llm(service, chat)
    chat.default = Reply("Back off two steps [1].")
    data = rest.post("/ask", json={"question": QUESTION, "k": 3}).json()
    assert data["mode"] == "llm" and data["answer"] == "Back off two steps [1]."
    assert chat.requests[-1]["stream"] is True


def test_rest_ask_stream_events(rest: TestClient, service: Service, chat: ChatServer) -> None:
    with_llm(service, chat)
    chat.default = Reply("Back off two steps [1] and check [7].")
    for how in ({"url": "/ask/stream"}, {"url": "/ask", "accept": "text/event-stream"}):
        headers = {"Accept": how["accept"]} if "accept" in how else {}
        with rest.stream(
            "POST", how["url"], json={"question": QUESTION, "k": 3}, headers=headers
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            events = list(read_events(response.iter_lines()))
        kinds = [e for e, _ in events]
        assert kinds[-1] == "answer" and set(kinds[:-1]) == {"token"} and len(kinds) > 3
        streamed = "".join(d["text"] for e, d in events if e == "token")
        assert streamed == "Back off two steps [1] and check [7]."
        final = events[-1][1]
        assert final["answer"] == "Back off two steps [1] and check." and final["removed_citations"]


def test_rest_ask_stream_error_event(rest: TestClient, service: Service) -> None:
    import dataclasses

    service.settings = dataclasses.replace(
        service.settings, llm_url="http://127.0.0.1:9/v1", llm_model="m", llm_retries=1
    )
    with rest.stream("POST", "/ask/stream", json={"question": QUESTION}) as response:
        assert response.status_code == 200
        events = list(read_events(response.iter_lines()))
    assert [e for e, _ in events] == ["error"]
    assert events[0][1]["error"] == "ChatUnreachable" and events[0][1]["status"] == 503
    assert "127.0.0.1:9" in events[0][1]["detail"]
    # bad input is a plain 400 before any stream starts; the fallback answers anyway
    assert rest.post("/ask/stream", json={"question": " "}).status_code == 400
    response = rest.post("/ask", json={"question": QUESTION, "fallback": "extractive"})
    assert response.status_code == 200 and "llm-unreachable" in response.json()["flags"]
    assert rest.post("/ask", json={"question": QUESTION}).status_code == 503


def test_owner_client_asks_with_the_callers_chat_model(
    rest: TestClient, service: Service, chat: ChatServer
) -> None:
    """Through an owner, the search runs there and the answer here, by the caller's chat
    model and key (tokens as they come); an owner's model answers no caller without one."""
    import dataclasses

    assert service.info is not None
    plain = service.settings
    caller = dataclasses.replace(plain, llm_url=chat.url, llm_model="test-chat", llm_api_key=KEY)
    chat.default = Reply("Zero point first [1].")
    tokens: list[str] = []
    client = OwnerClient(service.info, http=rest, settings=caller)
    data = client.ask(api.SearchArgs(QUESTION, k=3), on_token=tokens.append)
    assert "".join(tokens) == "Zero point first [1]." and data.mode == "llm"
    assert data.citations[0].n == 1 and len(chat.requests) == 1
    with_llm(service, chat)  # the owner's own model: not the caller's
    extractive = OwnerClient(service.info, http=rest, settings=plain).ask(api.SearchArgs(QUESTION))
    assert extractive.mode == "extractive" and len(chat.requests) == 1


def read_events(lines: Iterator[str]) -> list[tuple[str, dict[str, object]]]:
    """(event, data) of a server-sent event stream whose data lines are JSON objects."""
    events, event, data = [], "message", []
    for line in [*lines, ""]:
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            events.append((event, json.loads("\n".join(data))))
            event, data = "message", []
    return events
