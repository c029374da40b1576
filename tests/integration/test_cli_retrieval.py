"""The search, similar and eval commands through Click's runner (exit code, stdout, stderr)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from chromasync import api
from chromasync.cli.main import main
from chromasync.embed.hashing import HashEmbedder

from .test_retrieval import OverlapReranker, write_corpus


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("cli")
    root = write_corpus(base / "notes")
    env = {"CHROMASYNC_DATA_DIR": str(base / "data"), "CHROMASYNC_EMBEDDING_PROVIDER": "hash"}
    settings = api.resolve_settings({}, env)
    api.ingest([api.source_for(root)], settings, embedder=HashEmbedder())
    return root, env


def _run(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, args, env=env)
    return result.exit_code, result.stdout, result.stderr


def test_search_json_echoes_filters(indexed: tuple[Path, dict[str, str]]) -> None:
    _, env = indexed
    code, out, err = _run(
        [
            "search",
            "coastal loop",
            "--json",
            "--tag",
            "cycling",
            "--after",
            "2026-03-01",
            "--where",
            "rating=5",
            "--per-doc",
        ],
        env,
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "hybrid" and data["collections"] == ["chromasync-notes"]
    assert data["filters"] == {
        "where": {"rating": 5},
        "tags": ["cycling"],
        "tags_mode": "any",
        "after": "2026-03-01",
        "date_fields": ["date", "published_at"],
    }
    assert [h["path"] for h in data["hits"]] == ["journal/2026-05-01.md"]
    hit = data["hits"][0]
    for key in ("id", "path", "source", "heading", "start_line", "end_line", "score", "text"):
        assert key in hit, key
    assert set(hit["ranks"]) <= {"dense", "keyword"} and hit["collection"] == "chromasync-notes"


def test_search_terminal_cites_and_marks_words(indexed: tuple[Path, dict[str, str]]) -> None:
    _, env = indexed
    code, out, err = _run(["search", "zyxwvut", "--mode", "keyword", "--k", "1"], env)
    assert code == 0, err
    assert "guides/sourdough.md:" in out and "zyxwvut" in out
    assert "Sourdough starter" in out  # the heading path


def test_search_group_by_and_sort(indexed: tuple[Path, dict[str, str]]) -> None:
    _, env = indexed
    code, out, err = _run(["search", "the", "--per-doc", "--group-by", "source", "--k", "5"], env)
    assert code == 0, err
    assert "source: notes" in out
    code, out, _ = _run(
        ["search", "the", "--per-doc", "--sort", "date", "--min-score", "0", "--json"], env
    )
    paths = [h["path"] for h in json.loads(out)["hits"]]
    assert paths[0] == "journal/2026-05-01.md" and paths[-1] == "ideas.txt"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--where", "novalue"], "KEY=VALUE"),
        (["--after", "someday"], "--after"),
        (["--where-json", "{"], "not valid JSON"),
        (["--mode", "fuzzy"], "fuzzy"),
    ],
)
def test_search_bad_usage_exits_2(
    indexed: tuple[Path, dict[str, str]], args: list[str], message: str
) -> None:
    _, env = indexed
    code, out, err = _run(["search", "x", *args], env)
    assert code == 2
    assert message in err and out == ""


def test_search_unknown_collection_exits_1(indexed: tuple[Path, dict[str, str]]) -> None:
    _, env = indexed
    code, out, err = _run(["search", "x", "--collection", "nope"], env)
    assert code == 1 and "nope" in err and out == ""


def test_similar_json_and_table(indexed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, env = indexed
    capture = tmp_path / "capture.md"
    capture.write_text((root / "guides" / "grinder.md").read_text())
    code, out, err = _run(["similar", str(capture), "--k", "2", "--json"], env)
    assert code == 0, err
    data = json.loads(out)
    assert data["documents"][0]["path"] == "guides/grinder.md"
    assert data["documents"][0]["duplicate"] is True and data["duplicates"] >= 1
    assert data["sources"][0]["source"] == "notes"
    code, out, err = _run(["similar", str(capture)], env)
    assert code == 0, err
    assert "exact copy" in out and "closest source" in out
    code, _, err = _run(["similar", str(tmp_path / "missing.md")], env)
    assert code == 1 and "missing.md" in err


#: Each row of `eval`, and the options `search` takes to return what that row scores.
EVAL_ROWS = {
    "hybrid": ["--no-rerank"],
    "dense": ["--mode", "dense", "--no-rerank"],
    "keyword": ["--mode", "keyword", "--no-rerank"],
    "hybrid+feedback": ["--feedback", "--no-rerank"],
    "hybrid+rerank": [],  # a configured reranker reranks a search unless told not to
}


def test_eval_scores_what_search_returns(
    indexed: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each question's documents in every row of `eval --json` are those `search --json
    --per-doc --k K` returns with the row's options: every mode, feedback and a reranker."""
    _, env = indexed
    monkeypatch.setattr(
        "chromasync.retrieve.rerank.make_reranker",
        lambda model, name="cross-encoder": OverlapReranker() if model else None,
    )
    env = {**env, "CHROMASYNC_RERANK_MODEL": str(tmp_path)}
    questions = ["coastal loop ride", "brush the burrs weekly", "zyxwvut culture", "the"]
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "".join(
            json.dumps({"query": q, "relevant": ["guides/grinder.md"]}) + "\n" for q in questions
        )
    )
    code, out, err = _run(["eval", str(queries), "--feedback", "--k", "3", "--json"], env)
    assert code == 0, err
    report = json.loads(out)
    assert set(report["modes"]) == set(EVAL_ROWS)
    assert [row["id"] for row in report["per_query"]] == ["1", "2", "3", "4"]
    for question, row in zip(questions, report["per_query"], strict=True):
        assert set(row["vs_hybrid"]) == set(EVAL_ROWS) - {"hybrid"}
        for name, options in EVAL_ROWS.items():
            code, out, err = _run(
                ["search", question, "--per-doc", "--k", "3", "--json", *options], env
            )
            assert code == 0, err
            assert row["ranked"][name] == [h["path"] for h in json.loads(out)["hits"]], name
    reranked = [row["ranked"]["hybrid+rerank"] for row in report["per_query"]]
    assert reranked != [row["ranked"]["hybrid"] for row in report["per_query"]]


def test_eval_table_and_json(indexed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, env = indexed
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        '{"query": "zyxwvut culture", "relevant": ["sourdough"]}\n'
        '{"query": "studded tyres", "relevant": ["journal/2026-01-10.md"]}\n'
    )
    code, out, err = _run(["eval", str(queries), "--json"], env)
    assert code == 0, err
    data = json.loads(out)
    assert data["queries"] == 2 and set(data["modes"]) == {"hybrid", "dense", "keyword"}
    assert (
        data["modes"]["keyword"]["recall"] == 1.0 and "recall@100" not in data["modes"]["keyword"]
    )
    code, out, err = _run(["eval", str(queries), "--mode", "keyword", "--k", "5"], env)
    assert code == 0, err
    assert "nDCG@5" in out and "keyword" in out and "dense" not in out
    assert data["graded"] is False and set(data["versus"]) == {
        "hybrid vs dense",
        "hybrid vs keyword",
    }
    assert sum(data["versus"]["hybrid vs keyword"].values()) == 2
    code, out, err = _run(["eval", str(queries), "--feedback", "--json"], env)
    assert code == 0, err
    fed = json.loads(out)
    assert set(fed["modes"]) == {"hybrid", "dense", "keyword", "hybrid+feedback"}
    assert fed["modes"]["hybrid"] == data["modes"]["hybrid"]  # the plain one unchanged
    assert sum(fed["versus"]["hybrid+feedback vs hybrid"].values()) == 2
    code, out, err = _run(["eval", str(queries)], env)
    assert code == 0, err
    assert "graded" not in out and "hybrid vs keyword (nDCG@10, per query): " in out
    graded = tmp_path / "graded.jsonl"
    graded.write_text(
        '{"query": "studded tyres", "relevant": ["journal/2026-01-10.md", "sourdough"],'
        ' "grades": {"journal/2026-01-10.md": 2, "sourdough": 1}}\n'
    )
    code, out, err = _run(["eval", str(graded), "--json"], env)
    assert code == 0, err
    data = json.loads(out)
    assert data["graded"] is True and 0 < data["modes"]["keyword"]["ndcg_graded"] <= 1
    code, out, err = _run(["eval", str(graded)], env)
    assert code == 0, err
    assert "graded nDCG@10" in out and "hybrid vs dense (graded nDCG@10, per query)" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x"}\n')
    code, _, err = _run(["eval", str(bad)], env)
    assert code == 2 and "bad.jsonl:1" in err


def test_search_relevance_min_score_files_and_explain(
    indexed: tuple[Path, dict[str, str]],
) -> None:
    _, env = indexed
    code, out, err = _run(["search", "grinder calibration", "--json", "--k", "10"], env)
    assert code == 0, err
    hits = json.loads(out)["hits"]
    values = [h["relevance"] for h in hits]
    assert all(0.0 <= v <= 1.0 for v in values) and len(hits) >= 3
    assert all(set(h["scores"]) == set(h["ranks"]) for h in hits)
    floor = values[1]
    code, out, err = _run(
        ["search", "grinder calibration", "--json", "--min-score", str(floor)], env
    )
    assert code == 0, err
    kept = json.loads(out)["hits"]
    assert kept and all(h["relevance"] >= floor for h in kept)
    assert len(kept) == sum(v >= floor for v in values) < len(hits)
    code, _, err = _run(["search", "grinder", "--min-score", "1.5"], env)
    assert code == 2 and "1.5" in err
    code, out, err = _run(["search", "grinder calibration", "--files", "--k", "10"], env)
    assert code == 0, err
    paths = out.splitlines()
    assert paths == list(dict.fromkeys(h["path"] for h in hits))
    code, _, err = _run(["search", "grinder", "--files", "--json"], env)
    assert code == 2 and "--files" in err
    code, out, err = _run(["search", "grinder calibration", "--explain", "--k", "2"], env)
    assert code == 0, err
    assert out.count("hybrid score") == 2 and "-> relevance" in out


PROSPECTS = {
    "acme/grant-2024.md": ("acme", "Acme funds soil health and rural water projects for farmers."),
    "acme/profile.md": ("acme", "The Acme foundation: soil, water and farmers in rural towns."),
    "bolt/call.md": ("bolt", "The Bolt trust funds rural water and soil programs for farmers."),
    "misc/recipe.md": (None, "Sourdough bread with rural flour, soil to table."),
}


def test_similar_groups_by_a_field(tmp_path: Path) -> None:
    """Issue 39, Q3, "what do we know about this prospect": `similar` can group its
    documents by a field (`--group-by funder_slug`), as search does; groups come in the
    order of their best document, each document once."""
    root = tmp_path / "grants"
    for rel, (funder, body) in PROSPECTS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        front = f"---\nfunder_slug: {funder}\n---\n" if funder else ""
        (root / rel).write_text(f"{front}# {rel}\n\n{body}\n")
    env = {"CHROMASYNC_DATA_DIR": str(tmp_path / "data"), "CHROMASYNC_EMBEDDING_PROVIDER": "hash"}
    api.ingest([api.source_for(root)], api.resolve_settings({}, env), embedder=HashEmbedder())
    prospect = tmp_path / "prospect.md"
    prospect.write_text("# Prospect\n\nA rural soil and water program for farmers.\n")
    argv = ["similar", str(prospect), "--group-by", "funder_slug"]
    code, out, err = _run([*argv, "--json"], env)
    assert code == 0, err
    data = json.loads(out)
    assert data["group_by"] == "funder_slug"
    groups = {
        g["value"]: [data["documents"][i]["path"] for i in g["documents"]] for g in data["groups"]
    }
    assert sorted(groups["acme"]) == ["acme/grant-2024.md", "acme/profile.md"]
    assert groups["bolt"] == ["bolt/call.md"] and groups["(none)"] == ["misc/recipe.md"]
    flat = [i for g in data["groups"] for i in g["documents"]]
    assert flat == list(range(len(data["documents"])))  # contiguous, each document once
    code, out, err = _run(argv, env)
    assert code == 0, err
    assert "funder_slug: acme" in out and "funder_slug: bolt" in out
    code, _, err = _run([*argv[:2], "--group-by", "path:0"], env)
    assert code == 2 and "path:N" in err


def test_a_path_forges_no_line_and_drives_no_terminal(tmp_path: Path) -> None:
    """A file name with a newline, a carriage return or ESC sequences is one escaped line in
    every line-oriented output: search, links, ask's sources, similar, and a log warning
    (the newline was printed raw by all of them: `new` and `line.md:...` read as two)."""
    from ..conftest import run_cli

    notes = tmp_path / "notes"
    notes.mkdir()
    forged = "x\n2. forged.md:1-1 0.99\r\x1b[2J\x1b]8;;evil\x1b\\y.md"
    (notes / forged).write_text("---\ndate: soon\n---\n# Kiwi\n\nkiwi fruit, see [p](plain.md)\n")
    (notes / "plain.md").write_text("# Plain\n\nkiwi plain\n")
    env = {"CHROMASYNC_DATA_DIR": str(tmp_path / "data"), "CHROMASYNC_EMBEDDING_PROVIDER": "hash"}
    done = run_cli(["ingest", str(notes)], env=env)  # a process: its log lines as printed
    assert done.returncode == 0, done.stderr
    shown = "x\\n2. forged.md:1-1 0.99\\r\\x1b[2J\\x1b]8;;evil\\x1b\\y.md"
    [warning] = [line for line in done.stderr.splitlines() if "date field" in line]
    assert warning.startswith(f"{shown}: date field(s) date are not dates")
    outputs = {
        "search": _run(["search", "kiwi"], env),
        "links": _run(["links", "plain.md"], env),
        "ask": _run(["ask", "kiwi fruit"], env),
        "similar": _run(["similar", str(notes / "plain.md")], env),
    }
    for name, (code, out, err) in outputs.items():
        assert code == 0, (name, err)
        assert shown in out, (name, out)
        assert "\x1b" not in out + err and "\r" not in out, name
        assert not any(line.startswith("2. forged.md") for line in out.splitlines()), name
