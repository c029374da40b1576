"""chromasync against the indexing people use today, side by side, in one reproducible run.

    python benchmarks/compare.py                          # both corpora, every tool
    python benchmarks/compare.py --corpus scifact --limit 300 --tools chromasync,naive

Tools (see bench_tools.py for the exact settings): chromasync, a naive re-embed-everything
script, LangChain's indexing API (`cleanup="incremental"` and `"full"`) and LlamaIndex's
IngestionPipeline (`UPSERTS_AND_DELETE`). Scenarios, applied in order to one working copy
of the corpus (with a long multi-section file added): S1 cold ingest; S2 re-run, nothing
changed; S3 every file touched, content unchanged; S4 1% of files edited, 0.5% deleted,
0.5% added; S5 one section of the long file edited.

Each tool runs each scenario in a fresh subprocess (its peak RSS is the memory figure) with
the same embedder: a fast hashing stand-in that counts texts, so the times are each tool's
own overhead. The model's share is estimated as texts embedded / the MiniLM rate measured
in the same run on a sample of the same corpus's chunks, and a real-model check runs S1 and
S5 with MiniLM itself on a subset of SciFact to test that estimate. After every run the
collection is read back and compared with the files on disk (bench_verify.py).

Writes results.json, results.png and table.md under --out (default benchmarks/out/).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_corpus as corpus_mod  # noqa: E402
from bench_corpus import CORPORA, REPO, Mutation  # noqa: E402

SCENARIOS = ("S1", "S2", "S3", "S4", "S5")
DEFAULT_TOOLS = ("chromasync", "naive", "langchain", "langchain-full", "llamaindex")
ALL_TOOLS = DEFAULT_TOOLS
SCENARIO_TEXT = {
    "S1": "cold ingest",
    "S2": "re-run, nothing changed",
    "S3": "every file touched",
    "S4": "1% edited, 0.5% deleted, 0.5% added",
    "S5": "one section of a long file edited",
    "S2a": "re-run, nothing changed, access times a day older (optional)",
}
MUTATE: dict[str, Callable[[Path], Mutation]] = {
    "S1": lambda root: Mutation(),
    "S2": lambda root: Mutation(),
    "S3": corpus_mod.touch_all,
    "S4": corpus_mod.churn,
    "S5": corpus_mod.edit_long_section,
    "S2a": corpus_mod.age_access,
}
PACKAGES = (
    "chromasync",
    "chromadb",
    "onnxruntime",
    "langchain-core",
    "langchain-classic",
    "langchain-chroma",
    "langchain-text-splitters",
    "llama-index-core",
    "llama-index-vector-stores-chroma",
)


# -- children: one tool, one scenario, in a fresh process ------------------------------------


def child_run(spec: dict[str, Any]) -> dict[str, Any]:
    began = time.perf_counter()
    import logging

    logging.disable(logging.WARNING)
    import bench_tools
    import bench_verify

    run, read = bench_tools.RUNNERS[spec["tool"]]
    embedder = bench_tools.make_embedder(spec["embedder"])
    root, state = Path(spec["root"]), Path(spec["state"])
    ready = time.perf_counter()
    for module in bench_tools.IMPORTS[spec["tool"]]:
        importlib.import_module(module)
    imported = time.perf_counter()
    info = run(root, state, embedder)
    done = time.perf_counter()
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    check = bench_verify.check(read(root, state), root)
    uncharged = embedder.counting_seconds
    return {
        "wall_s": done - ready - uncharged,
        "import_s": imported - ready,
        "run_s": done - imported - uncharged,
        "startup_s": ready - began,
        "texts": embedder.texts,
        "tokens": embedder.tokens,
        "embed_calls": embedder.calls,
        "embed_s": embedder.seconds,
        "rss_mb": rss_kb / 1024,
        "check": check,
        "info": info,
    }


def child_probe(spec: dict[str, Any]) -> dict[str, Any]:
    """Floors on this tree (walk+stat; walk+read+hash) and the MiniLM rate on its chunks."""
    import hashlib

    root = Path(spec["root"])
    began = time.perf_counter()
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            path = os.path.join(folder, name)
            files.append((path, os.lstat(path).st_size))
    walk = time.perf_counter() - began
    began = time.perf_counter()
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            path = os.path.join(folder, name)
            os.lstat(path)
            with open(path, "rb") as handle:
                hashlib.sha256(handle.read()).hexdigest()
    read = time.perf_counter() - began
    out: dict[str, Any] = {"files": len(files), "walk_s": walk, "read_hash_s": read}
    if spec["sample"] > 0:
        out.update(_model_rate(root, spec["sample"]))
    return out


def _model_rate(root: Path, sample: int) -> dict[str, Any]:
    """Texts/s of MiniLM (ONNX) on an evenly spread sample of this corpus's chunk texts."""
    from bench_tools import make_embedder

    from chromasync.chunk import Budget, chunk_document
    from chromasync.corpus.read import read_file
    from chromasync.corpus.walk import discover_source
    from chromasync.embed.tokens import default_token_meter
    from chromasync.records import SourceSpec

    embedder = make_embedder("minilm")
    budget = Budget(embedder.max_tokens, default_token_meter())
    files = discover_source(SourceSpec(label="corpus", root=root)).files
    step = max(1, len(files) // sample)
    texts: list[str] = []
    for stat in files[::step]:
        document = read_file(stat).document
        if document is not None:
            texts += [c.embed_text for c in chunk_document(document, budget)]
    texts = texts[:: max(1, len(texts) // sample)][:sample]
    embedder.embed_documents(texts[:8])  # load the session, warm up
    tokens_before, seconds_before = embedder.tokens, embedder.seconds
    embedder.embed_documents(texts)
    seconds = embedder.seconds - seconds_before
    tokens = embedder.tokens - tokens_before
    return {
        "rate_texts": len(texts),
        "rate_tokens": tokens,
        "rate_s": seconds,
        "rate": len(texts) / seconds,
        "token_rate": tokens / seconds,
    }


def child_main(kind: str, spec_json: str) -> None:
    spec = json.loads(spec_json)
    result = child_run(spec) if kind == "_run" else child_probe(spec)
    Path(spec["result"]).write_text(json.dumps(result), encoding="utf-8")


def spawn(kind: str, spec: dict[str, Any], log: Path, timeout: float) -> dict[str, Any]:
    result = log.with_suffix(".json")
    spec = {**spec, "result": str(result)}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(HERE), env.get("PYTHONPATH", "")])
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env["ANONYMIZED_TELEMETRY"] = "False"
    began = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), kind, json.dumps(spec)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=timeout,
        )
    if proc.returncode != 0 or not result.is_file():
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    data: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    data["process_s"] = time.perf_counter() - began
    return data


# -- the run -------------------------------------------------------------------------------


def run_chain(
    label: str,
    root: Path,
    tools: list[str],
    embedder: str,
    scenarios: list[str],
    state: Path,
    logs: Path,
    timeout: float,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    changes: dict[str, Any] = {}
    for scenario in scenarios:
        changes[scenario] = MUTATE[scenario](root).as_json()
        for tool in tools:
            log = logs / f"{label}-{embedder}-{scenario}-{tool}.log"
            spec = {
                "tool": tool,
                "root": str(root),
                "state": str(state / tool),
                "embedder": embedder,
            }
            print(f"  {label} {scenario} {tool} ({embedder}) ...", end="", flush=True)
            row = {"corpus": label, "scenario": scenario, "tool": tool, "embedder": embedder}
            row.update(spawn("_run", spec, log, timeout))
            if "error" in row:
                print(f" FAILED: {row['error'][:300]}")
            else:
                print(f" {row['wall_s']:.2f} s, {row['texts']} texts, {row['check']}")
            rows.append(row)
    return rows, changes


def add_estimates(rows: list[dict[str, Any]], rates: dict[str, dict[str, Any]]) -> None:
    """own_s (the tool's time less the stand-in's), est_s (+ texts / MiniLM rate), ratios.

    est_tok_s estimates the model's share from word pieces instead (tokens / token rate),
    which does not favour tools that cut fewer, longer chunks.
    """
    for row in rows:
        if "error" in row:
            continue
        stand_in = row["embed_s"] if row["embedder"] == "hash" else 0.0
        row["own_s"] = row["wall_s"] - stand_in
        probe = rates.get(row["corpus"])
        if row["embedder"] == "hash" and probe:
            row["model_est_s"] = row["texts"] / probe["rate"]
            row["est_s"] = row["own_s"] + row["model_est_s"]
            row["est_tok_s"] = row["own_s"] + row["tokens"] / probe["token_rate"]
    base = {
        (r["corpus"], r["scenario"], r["embedder"]): r
        for r in rows
        if r["tool"] == "chromasync" and "error" not in r
    }
    for row in rows:
        ref = base.get((row["corpus"], row["scenario"], row["embedder"]))
        if ref is None or "error" in row:
            continue
        for key in ("own_s", "est_s", "est_tok_s"):
            if key in row and key in ref and ref[key] > 0:
                row[f"x_{key}"] = row[key] / ref[key]


def real_check(
    args: argparse.Namespace,
    tools: list[str],
    cache: Path,
    work: Path,
    logs: Path,
) -> dict[str, Any]:
    """S1 and S5 with MiniLM itself on a SciFact subset, beside the estimate from the stand-in.

    The estimate is made exactly as for the main table: the tool's own time with the
    stand-in, plus texts (or word pieces) / the rate measured on a sample of this corpus.
    """
    base = corpus_mod.materialize("scifact", args.real_limit, cache)
    label = f"scifact-{args.real_limit}"
    measured: dict[str, list[dict[str, Any]]] = {}
    probe: dict[str, Any] = {}
    for embedder in ("hash", "minilm"):
        root = corpus_mod.prepare(base, work / f"real-{embedder}")
        if embedder == "hash":
            probe = spawn(
                "_probe",
                {"root": str(root), "sample": args.rate_sample},
                logs / f"{label}-probe.log",
                args.timeout,
            )
        rows, _ = run_chain(
            label,
            root,
            tools,
            embedder,
            ["S1", "S5"],
            work / f"real-{embedder}" / "state",
            logs,
            args.timeout,
        )
        measured[embedder] = rows
    out: list[dict[str, Any]] = []
    for fast, real in zip(measured["hash"], measured["minilm"], strict=True):
        if "error" in fast or "error" in real or not probe.get("rate"):
            continue
        own = fast["wall_s"] - fast["embed_s"]
        by_texts = own + fast["texts"] / probe["rate"]
        by_tokens = own + fast["tokens"] / probe["token_rate"]
        out.append(
            {
                "scenario": fast["scenario"],
                "tool": fast["tool"],
                "texts": real["texts"],
                "tokens": real["tokens"],
                "own_s": own,
                "estimate_s": by_texts,
                "estimate_tok_s": by_tokens,
                "measured_s": real["wall_s"],
                "model_s": real["embed_s"],
                "measured_rate": real["texts"] / real["embed_s"] if real["embed_s"] else None,
                "error_pct": 100 * (by_texts - real["wall_s"]) / real["wall_s"],
                "error_tok_pct": 100 * (by_tokens - real["wall_s"]) / real["wall_s"],
                "rss_mb": real["rss_mb"],
                "check": real["check"],
            }
        )
    return {"corpus": label, "probe": probe, "rows": out}


# -- output --------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in rows:
        if r["embedder"] != "hash":
            continue
        if "error" in r:
            out.append([r["corpus"], r["scenario"], r["tool"], "FAILED"] + ["-"] * 12)
            continue
        c = r["check"]
        out.append(
            [
                r["corpus"],
                r["scenario"],
                r["tool"],
                _fmt(r["own_s"]),
                _fmt(r["import_s"]),
                _fmt(r.get("x_own_s"), 1),
                str(r["texts"]),
                _fmt(r.get("est_s"), 1),
                _fmt(r.get("x_est_s"), 1),
                _fmt(r["rss_mb"], 0),
                str(c["records"]),
                str(c["orphans"]),
                str(c["stale"]),
                str(c["duplicates"]),
                str(c["missing"]),
            ]
        )
    return out


HEADER = [
    "corpus",
    "scen.",
    "tool",
    "own s",
    "import s",
    "x cs",
    "texts",
    "est. s",
    "x cs",
    "RSS MB",
    "records",
    "orphans",
    "stale",
    "dups",
    "missing",
]


def render_text(rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADER)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True))]
    previous = None
    for r in rows:
        if previous is not None and r[:2] != previous:
            lines.append("")
        previous = r[:2]
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))
    return "\n".join(lines)


def render_markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def render_notes(report: dict[str, Any]) -> str:
    """Per corpus: the floors (walk, read+hash, the model alone) and what each scenario did."""
    lines = []
    for name, data in report["corpora"].items():
        probe = data["probe"]
        if "error" in probe:
            lines.append(f"- {name}: probe failed: {probe['error']}")
            continue
        line = (
            f"- {name}: {probe['files']} files; walk+stat {probe['walk_s']:.2f} s, "
            f"walk+read+sha256 {probe['read_hash_s']:.2f} s"
        )
        if probe.get("rate"):
            cs = [
                r
                for r in report["rows"]
                if r["corpus"] == name and r["tool"] == "chromasync" and r["scenario"] == "S1"
            ]
            line += (
                f"; MiniLM {probe['rate']:.1f} texts/s ({probe['token_rate']:.0f} word "
                f"pieces/s) on {probe['rate_texts']} of its chunks"
            )
            if cs and "error" not in cs[0]:
                line += f", so the model alone needs {cs[0]['texts'] / probe['rate']:.0f} s for S1"
        lines.append(line)
        changes = ", ".join(
            f"{scenario}: " + " ".join(f"{k} {v}" for k, v in change.items() if v)
            for scenario, change in data["changes"].items()
            if any(change.values())
        )
        if changes:
            lines.append(f"  - files changed: {changes}")
    real = report.get("real_check", {})
    for item in real.get("rows", []):
        lines.append(
            f"- real MiniLM on {real['corpus']}, {item['scenario']} {item['tool']}: measured "
            f"{item['measured_s']:.1f} s for {item['texts']} texts; estimated "
            f"{item['estimate_s']:.1f} s from texts ({item['error_pct']:+.0f}%), "
            f"{item['estimate_tok_s']:.1f} s from word pieces ({item['error_tok_pct']:+.0f}%)"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fast = [r for r in rows if r["embedder"] == "hash" and "error" not in r]
    corpora = sorted({r["corpus"] for r in fast})
    tools = [t for t in ALL_TOOLS if any(r["tool"] == t for r in fast)]
    scenarios = list(dict.fromkeys(r["scenario"] for r in fast))
    metric = "est_s" if all("est_s" in r for r in fast) else "own_s"
    fig, axes = plt.subplots(2, len(corpora), figsize=(7 * len(corpora), 8), squeeze=False)
    width = 0.8 / max(1, len(tools))
    for col, name in enumerate(corpora):
        for row_index, (key, label) in enumerate(
            [
                (metric, "seconds (" + ("own + est. MiniLM" if metric == "est_s" else "own") + ")"),
                ("texts", "texts embedded"),
            ]
        ):
            ax = axes[row_index][col]
            for i, tool in enumerate(tools):
                values = []
                for scenario in scenarios:
                    match = [
                        r
                        for r in fast
                        if r["corpus"] == name and r["tool"] == tool and r["scenario"] == scenario
                    ]
                    value = match[0][key] if match else 0
                    values.append(value if key == "texts" else max(value, 0.01))
                xs = [s + (i - (len(tools) - 1) / 2) * width for s in range(len(scenarios))]
                ax.bar(xs, values, width, label=tool)
            if key == "texts":
                ax.set_yscale("symlog", linthresh=1)
                ax.set_ylim(bottom=0)
            else:
                ax.set_yscale("log")
            ax.set_xticks(range(len(scenarios)), scenarios)
            ax.set_title(f"{name}: {label}")
            ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def machine() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "cpu": model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": versions,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="all", help="scifact, hugo or all")
    parser.add_argument("--limit", type=int, default=None, help="use the first N files only")
    parser.add_argument("--tools", default=",".join(DEFAULT_TOOLS))
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument(
        "--rate-sample",
        type=int,
        default=128,
        help="texts to time MiniLM on per corpus (0: no model at all)",
    )
    parser.add_argument(
        "--real-limit",
        type=int,
        default=100,
        help="SciFact files for the real-model check of S1/S5 (0: skip it)",
    )
    parser.add_argument(
        "--real-tools",
        default="chromasync,langchain,llamaindex",
        help="tools for the real-model check (short and long chunks; naive adds nothing)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "chromasync-bench-cache"
    )
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    parser.add_argument(
        "--render", type=Path, help="only redo the table, notes and plot from a results.json"
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per tool run")
    args = parser.parse_args(argv)
    args.corpora = list(CORPORA) if args.corpus == "all" else args.corpus.split(",")
    args.tool_list = args.tools.split(",")
    unknown = set(args.tool_list) - set(ALL_TOOLS)
    if unknown:
        parser.error(f"unknown tool(s): {', '.join(sorted(unknown))}")
    args.scenario_list = args.scenarios.split(",")
    unknown = set(args.scenario_list) - set(MUTATE)
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    if args.rate_sample == 0:
        args.real_limit = 0
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.render:
        return write_outputs(json.loads(args.render.read_text(encoding="utf-8")), args.out)
    logs = args.out / "logs"
    logs.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="chromasync-bench-"))
    report: dict[str, Any] = {
        "machine": machine(),
        "args": {
            "corpora": args.corpora,
            "limit": args.limit,
            "tools": args.tool_list,
            "scenarios": args.scenario_list,
            "rate_sample": args.rate_sample,
            "real_limit": args.real_limit,
        },
        "corpora": {},
        "rows": [],
    }
    try:
        for name in args.corpora:
            base = corpus_mod.materialize(name, args.limit, args.cache)
            root = corpus_mod.prepare(base, work / name)
            print(f"{name}: {len(corpus_mod.markdown_files(root))} Markdown files in {root}")
            probe = spawn(
                "_probe",
                {"root": str(root), "sample": args.rate_sample},
                logs / f"{name}-probe.log",
                args.timeout,
            )
            print(f"  floors and model rate: {probe}")
            rows, changes = run_chain(
                name,
                root,
                args.tool_list,
                "hash",
                args.scenario_list,
                work / name / "state",
                logs,
                args.timeout,
            )
            report["corpora"][name] = {"probe": probe, "changes": changes}
            report["rows"] += rows
            partial = args.out / "results.partial.json"
            partial.write_text(json.dumps(report, indent=2), encoding="utf-8")
        if args.real_limit and "scifact" in args.corpora:
            tools = [t for t in args.real_tools.split(",") if t in args.tool_list]
            report["real_check"] = real_check(args, tools, args.cache, work, logs)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return write_outputs(report, args.out)


def write_outputs(report: dict[str, Any], out: Path) -> int:
    """Estimates, the table (printed and table.md), notes, results.json and the plot."""
    rates = {n: c["probe"] for n, c in report["corpora"].items() if c["probe"].get("rate")}
    add_estimates(report["rows"], rates)
    table = table_rows(report["rows"])
    print()
    print(render_text(table))
    notes = render_notes(report)
    print(notes)
    (out / "results.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    machine_line = (
        f"{report['machine']['date']}, {report['machine']['cpus']} CPUs "
        f"({report['machine']['cpu']}), Python {report['machine']['python']}"
    )
    (out / "table.md").write_text(
        f"{machine_line}\n\n{render_markdown(table)}\n\n{notes}\n", encoding="utf-8"
    )
    if plot(report["rows"], out / "results.png"):
        print(f"wrote {out / 'results.json'}, table.md and results.png")
    else:
        print(f"wrote {out / 'results.json'} and table.md (no matplotlib: no plot)")
    return 1 if any("error" in r for r in report["rows"]) else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] in ("_run", "_probe"):
        child_main(sys.argv[1], sys.argv[2])
    else:
        sys.exit(main())
