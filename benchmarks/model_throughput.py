"""Is ingest bound by the model? Raw model throughput against cold-ingest throughput, and
the start-up of a one-chunk run, measured side by side in one run.

    nice python benchmarks/model_throughput.py                  # 600 SciFact docs
    nice python benchmarks/model_throughput.py --docs 5183 --skip-startup
    nice python benchmarks/model_throughput.py --variants --docs 1000 --claims 200

Variants (`--variants`, see model_variants.py): sentence-transformers against the ONNX
candidates (fp32, fused, int8 quantizations, threads, batches by token count), texts/s on the
same chunk texts and SciFact nDCG@10 (dense, hybrid) on a subset, as one table.

Throughput. The texts are exactly those a cold ingest embeds (collected by planning the
corpus once with a recording embedder). "Raw" calls the loaded local model directly on all
of them (`embed_documents`, batches of 32 sorted by length); "ingest" is `api.ingest` of
the corpus into a fresh data dir (empty manifest, cache and collection) with the same
loaded model, once into the embedded store and once into a `chroma run` server on
loopback. Raw is measured before and after the ingests and averaged, so machine load
drifts into both. The rest of an ingest's time is split into embedding, Chroma writes,
cache writes and everything else (walk, read, chunk, plan, manifest).

Against sentence-transformers (`--versus-st ROUNDS`, issue 19's goal): the default local
model's (or `--variant`'s) cold `api.ingest` of the corpus (a fresh data dir each round, the
model loaded once; with `--cli`, a whole `python -m chromasync ingest`, start-up included)
against sentence-transformers (torch fp32, batch 32) encoding exactly the chunk texts that
ingest embeds, alternated round by round in one process; chunks per second of each and
their ratio per round.

Where the time goes (`--profile`, issue 41): for each variant (fp32, int8, and bf16 where
the CPU has AMX), a cold `api.ingest` of the corpus with that variant loaded beforehand,
its wall time split into tokenising, the model's run (ONNX Runtime's `session.run`, or the
bf16 encoder), pooling (numpy, for Chroma's layout), the rest of embedding (batching,
padding, lists), Chroma's writes, the embedding cache's and everything else; texts/s and
the model's achieved GFLOP/s (the multiply-adds of its run, padding included, over its run
time) against the peak of numpy's fp32 matrix product of the model's shapes on the same
machine (`gemm_peak`). sentence-transformers (torch fp32, batch 32) encodes the same texts
before and after, for the ratio.

Start-up. Wall time of `python -m chromasync ingest ONE_FILE_DIR` that embeds one chunk into
a fresh data dir: sentence-transformers (`backend=torch variant=fp32`), ONNX int8 and torch
bf16 (each made and cached by an untimed first pass), median of N runs each.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))

from chromasync import api  # noqa: E402
from chromasync.config.resolve import resolve_settings  # noqa: E402
from chromasync.embed.hashing import HashEmbedder  # noqa: E402
from chromasync.embed.local import LocalEmbedder  # noqa: E402


class Recorder(HashEmbedder):
    """Plans like the real model (same tokenizer and budget) and records the texts."""

    def __init__(self, model: LocalEmbedder) -> None:
        super().__init__(dimension=8, tokenizer_path=model.tokenizer_path)
        self.max_tokens = model.max_tokens
        self.texts: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return super().embed_documents(texts)


@contextmanager
def timed(totals: dict[str, float], key: str) -> Iterator[None]:
    began = time.perf_counter()
    try:
        yield
    finally:
        totals[key] = totals.get(key, 0.0) + time.perf_counter() - began


def wrap(owner: Any, name: str, totals: dict[str, float], key: str) -> Callable[[], None]:
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with timed(totals, key):
            return original(*args, **kwargs)

    setattr(owner, name, wrapper)
    return lambda: setattr(owner, name, original)


def settings_for(data_dir: Path, url: str | None) -> Any:
    flags: dict[str, Any] = {"data_dir": str(data_dir)}
    if url:
        flags["chroma_url"] = url
    return resolve_settings(flags, {"CHROMASYNC_COLLECTIONS": "shared"})


def raw_throughput(model: LocalEmbedder, texts: list[str]) -> float:
    began = time.perf_counter()
    model.embed_documents(texts)
    return len(texts) / (time.perf_counter() - began)


def ingest_run(corpus: Path, model: LocalEmbedder, data: Path, url: str | None) -> dict[str, Any]:
    from chromasync.embed.cache import EmbeddingCache
    from chromasync.store.chroma import Collection

    totals: dict[str, float] = {}
    undo = [
        wrap(model, "embed_documents", totals, "embed"),
        wrap(Collection, "upsert", totals, "chroma_write"),
        wrap(EmbeddingCache, "put_many", totals, "cache_write"),
    ]
    try:
        began = time.perf_counter()
        [summary] = api.ingest([api.source_for(corpus)], settings_for(data, url), embedder=model)
        wall = time.perf_counter() - began
    finally:
        for restore in undo:
            restore()
    other = wall - sum(totals.values())
    return {
        "chunks": summary.chunks_embedded,
        "wall_s": round(wall, 2),
        "texts_per_s": round(summary.chunks_embedded / wall, 1),
        "share": {k: round(v / wall, 3) for k, v in {**totals, "other": other}.items()},
    }


def loaded_model(
    corpus: Path, tmp: Path, variant: str = "auto", texts: list[str] | None = None
) -> tuple[LocalEmbedder, list[str]]:
    """The local model (`variant`: the default), loaded and warmed up, and the texts a cold
    ingest of `corpus` embeds (planned once with a recording embedder, unless given)."""
    model = LocalEmbedder(variant=variant)
    if texts is None:
        recorder = Recorder(model)
        api.ingest([api.source_for(corpus)], settings_for(tmp / "plan", None), embedder=recorder)
        texts = recorder.texts
    model.embed_documents(texts[:32])  # outside every measurement
    return model, texts


def cli_run(corpus: Path, data: Path, variant: str, chunks: int) -> dict[str, Any]:
    """A cold `python -m chromasync ingest` of `corpus` into `data`, timed from outside."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for torch_cap in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA"):  # for the ST side only
        env.pop(torch_cap, None)
    command = [sys.executable, "-m", "chromasync", "ingest", str(corpus), "--data-dir"]
    command += [str(data), "--embed-option", f"variant={variant}", "--json"]
    before, began = os.times(), time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    wall, after = time.perf_counter() - began, os.times()
    child = sum(after[2:4]) - sum(before[2:4])  # children's user and system time
    rate = round(chunks / wall, 1)
    return {"chunks": chunks, "texts_per_s": rate, "share": {}, "child_cpu_s": child}


def versus_st(
    corpus: Path, tmp: Path, rounds: int, variant: str, cli: bool = False
) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import model_variants

    model, texts = loaded_model(corpus, tmp, variant)
    st = model_variants.SentenceTransformers()
    st.embed_documents(texts[:32])
    rows: list[dict[str, Any]] = []
    for n in range(rounds):
        load = os.getloadavg()[0]
        cpu = time.process_time()
        began = time.perf_counter()
        st.embed_documents(texts)
        st_s, st_cpu = time.perf_counter() - began, time.process_time() - cpu
        cpu = time.process_time()
        if cli:  # the whole run, start-up included: `chromasync ingest` in a fresh process
            ingest = cli_run(corpus, tmp / f"data-{n}", variant, len(texts))
        else:
            ingest = ingest_run(corpus, model, tmp / f"data-{n}", None)
        ingest_cpu = time.process_time() - cpu + ingest.pop("child_cpu_s", 0.0)
        assert ingest["chunks"] == len(texts), (ingest["chunks"], len(texts))
        rows.append(
            {
                "round": n + 1,
                "load_avg": round(load, 2),
                "st_texts_per_s": round(len(texts) / st_s, 1),
                "ingest_texts_per_s": ingest["texts_per_s"],
                "x_st": round(ingest["texts_per_s"] * st_s / len(texts), 2),
                "x_st_per_cpu_s": round(st_cpu / ingest_cpu, 2),
                "ingest_share": ingest["share"],
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return {
        "texts": len(texts),
        "model_id": model.model_id,
        "runtime": model.runtime,
        "rounds": rows,
        "x_st_mean": round(statistics.mean(r["x_st"] for r in rows), 2),
    }


def gemm_peak(rounds: int = 3, seconds: float = 1.0) -> float:
    """The best fp32 GFLOP/s of numpy's matrix product (its BLAS, every core) at the
    model's feed-forward shape (8,192 tokens x 384 -> 1,536) over `rounds` windows."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((8192, 384), dtype=np.float32)
    b = rng.standard_normal((384, 1536), dtype=np.float32)
    a @ b
    best = 0.0
    for _ in range(rounds):
        n, began = 0, time.perf_counter()
        while time.perf_counter() - began < seconds:
            a @ b
            n += 1
        best = max(best, 2 * a.shape[0] * 384 * 1536 * n / (time.perf_counter() - began) / 1e9)
    return best


def model_flops(config: dict[str, Any], batch: int, width: int) -> float:
    """Multiply-adds x 2 of a BERT encoder's run on `batch` texts padded to `width` tokens:
    per layer the four attention projections, the feed-forward and the attention itself."""
    h, ff = config.get("hidden_size", 384), config.get("intermediate_size", 1536)
    per_layer = 2 * width * (4 * h * h + 2 * h * ff) + 4 * width * width * h
    return float(batch * config.get("num_hidden_layers", 6) * per_layer)


class Timed:
    """Stands in for the model's tokenizer, ONNX session or bf16 run: times the call, and
    counts the model's FLOPs (`model_flops` of `config`) from the `input_ids` it is fed."""

    def __init__(self, inner: Any, totals: dict[str, float], config: dict[str, Any]) -> None:
        self.inner, self.totals, self.config = inner, totals, config

    def encode_batch(self, texts: list[str]) -> Any:
        with timed(self.totals, "tokenise"):
            return self.inner.encode_batch(texts)

    def _model(self, ids: Any, call: Callable[[], Any]) -> Any:
        self.totals["flops"] = self.totals.get("flops", 0.0) + model_flops(self.config, *ids.shape)
        with timed(self.totals, "model"):
            return call()

    def run(self, names: Any, feeds: dict[str, Any]) -> Any:
        return self._model(feeds["input_ids"], lambda: self.inner.run(names, feeds))

    def __call__(self, ids: Any, mask: Any, types: Any) -> Any:
        return self._model(ids, lambda: self.inner(ids, mask, types))


def profile(corpus: Path, tmp: Path, variants: Sequence[str]) -> dict[str, Any]:
    """Each variant's cold ingest of `corpus`, split by stage (module docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import model_variants

    from chromasync.embed import bert, local, modelfiles

    peak = gemm_peak()
    texts = loaded_model(corpus, tmp, "int8")[1]
    st = model_variants.SentenceTransformers()
    st.embed_documents(texts[:32])
    st_s = [raw_throughput(st, texts)]  # type: ignore[arg-type]
    print(json.dumps({"st_texts_per_s": round(st_s[0], 1)}), file=sys.stderr, flush=True)
    rows: list[dict[str, Any]] = []
    for variant in variants:
        model = loaded_model(corpus, tmp, variant, texts)[0]
        config = modelfiles.read_json(model.model_dir, "config.json")
        totals: dict[str, float] = {}
        model._tokenizer = Timed(model._tokenizer, totals, config)
        undo = [wrap(local, "mean_pool", totals, "pooling")]
        if model._session is not None:
            model._session = Timed(model._session, totals, config)
        else:
            run, kept = bert.numpy_run, (totals, config)
            bert.numpy_run = lambda encoder, run=run, kept=kept: Timed(run(encoder), *kept)
            undo.append(functools.partial(setattr, bert, "numpy_run", run))
        try:
            ingest = ingest_run(corpus, model, tmp / f"profile-{variant}", None)
        finally:
            for restore in undo:
                restore()
        wall = ingest["wall_s"]
        embed = ingest["share"]["embed"] * wall
        stages = {k: totals.get(k, 0.0) for k in ("tokenise", "model", "pooling")}
        stages["embed_rest"] = embed - sum(stages.values())
        share = {k: round(v / wall, 3) for k, v in stages.items()}
        share |= {k: v for k, v in ingest["share"].items() if k != "embed"}
        gflops = totals.get("flops", 0.0) / max(totals.get("model", 0.0), 1e-9) / 1e9
        rows.append(
            {
                "variant": model.model_id.rsplit("@", 1)[-1] if "@" in model.model_id else "fp32",
                "chunks": ingest["chunks"],
                "ingest_texts_per_s": ingest["texts_per_s"],
                "model_texts_per_s": round(ingest["chunks"] / totals.get("model", 1e-9), 1),
                "model_gflop_per_s": round(gflops, 1),
                "of_gemm_peak": round(gflops / peak, 2),
                "share": share,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    st_s.append(raw_throughput(st, texts))  # type: ignore[arg-type]
    st_rate = statistics.mean(st_s)
    for row in rows:
        row["x_st"] = round(row["ingest_texts_per_s"] / st_rate, 2)
    return {
        "texts": len(texts),
        "gemm_peak_gflop_per_s": round(peak, 1),
        "st_texts_per_s": [round(x, 1) for x in st_s],
        "rows": rows,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def chroma_server(path: Path) -> Iterator[str]:
    import httpx

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    chroma = Path(sys.executable).parent / "chroma"
    with (path.parent / "chroma.log").open("wb") as log:
        proc = subprocess.Popen(
            [str(chroma), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


def startup(tmp: Path, runs: int) -> dict[str, float]:
    one = tmp / "one"
    one.mkdir()
    (one / "note.md").write_text("# One\n\nA single short note about kites.\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["CHROMASYNC_COLLECTIONS"] = "shared"
    kinds = {  # the runtimes a one-chunk run can start, each already made and cached
        "st": ["backend=torch", "variant=fp32"],
        "onnx_int8": ["variant=int8"],
        "torch_bf16": ["variant=bf16"],
    }
    out: dict[str, list[float]] = {kind: [] for kind in kinds}
    for n in range(runs + 1):  # the first pass makes and caches what each needs: not timed
        for kind, options in kinds.items():
            data = tmp / f"start-{kind}-{n}"
            args = [sys.executable, "-m", "chromasync", "ingest", str(one)]
            args += ["--data-dir", str(data), "--json"]
            for option in options:
                args += ["--embed-option", option]
            began = time.perf_counter()
            done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - began
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            assert json.loads(done.stdout)[0]["chunks_embedded"] == 1  # one row per source
            if n:
                out[kind].append(wall)
    return {f"{k}_median_s": round(statistics.median(v), 2) for k, v in out.items()} | {
        f"{k}_runs_s": [round(x, 2) for x in v]
        for k, v in out.items()  # type: ignore[misc]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=600, help="SciFact documents (max 5183)")
    parser.add_argument("--startup-runs", type=int, default=3)
    parser.add_argument("--skip-startup", action="store_true")
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument("--variants", action="store_true", help="the numeric-variant table")
    parser.add_argument("--claims", type=int, default=200, help="--variants: training claims")
    parser.add_argument("--speed-texts", type=int, default=600, help="--variants: texts timed")
    parser.add_argument("--no-quality", action="store_true", help="--variants: speed only")
    parser.add_argument(
        "--interleaved",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="--variants: ST, fp32, int8, "
        "bf16 timed round by round on the same texts (--speed-texts per round)",
    )
    parser.add_argument(
        "--candidates", default="", help="--interleaved: CANDIDATES indexes, e.g. 0,1,4,5,7"
    )
    parser.add_argument(
        "--versus-st",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="cold ingest with the default model against sentence-transformers on its chunks",
    )
    parser.add_argument("--variant", default="auto", help="--versus-st: the local variant")
    parser.add_argument(
        "--cli", action="store_true", help="--versus-st: a cold CLI run, start-up included"
    )
    parser.add_argument(
        "--profile",
        default="",
        metavar="VARIANTS",
        help="where a cold ingest's time goes, per variant, e.g. fp32,int8,bf16",
    )
    args = parser.parse_args()
    if args.variants and args.interleaved:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import model_variants

        which = [int(i) for i in args.candidates.split(",") if i.strip()]
        found = model_variants.interleaved(args.docs, args.interleaved, args.speed_texts, which)
        print(json.dumps(found, indent=2))
        return
    if args.variants:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import model_variants

        found = model_variants.measure(
            args.docs, args.claims, args.speed_texts, not args.no_quality
        )
        print(json.dumps(found, indent=2))
        print(model_variants.table(found))
        return
    tmp = Path(tempfile.mkdtemp(prefix="chromasync-model-bench-"))
    try:
        corpus = tmp / "scifact"
        tool = SHARED / "tools" / "materialize_scifact.py"
        limit = ["--limit", str(args.docs)]
        subprocess.run([sys.executable, str(tool), str(corpus), *limit], check=True)
        if args.profile:
            found = profile(corpus, tmp, args.profile.split(","))
            print(json.dumps(found | {"docs": args.docs, "cpus": os.cpu_count()}, indent=2))
            return
        if args.versus_st:
            found = versus_st(corpus, tmp, args.versus_st, args.variant, args.cli)
            print(json.dumps(found | {"docs": args.docs, "cpus": os.cpu_count()}, indent=2))
            return
        model, texts = loaded_model(corpus, tmp)
        report: dict[str, Any] = {
            "docs": args.docs,
            "texts": len(texts),
            "runtime": model.runtime,
            "cpus": os.cpu_count(),
            "load_avg_start": os.getloadavg()[0],
        }
        raw_before = raw_throughput(model, texts)
        embedded = ingest_run(corpus, model, tmp / "data-embedded", None)
        server: dict[str, Any] | None = None
        if not args.skip_server:
            with chroma_server(tmp / "server-db") as url:
                server = ingest_run(corpus, model, tmp / "data-server", url)
        raw_after = raw_throughput(model, texts)
        raw = (raw_before + raw_after) / 2
        report["raw_texts_per_s"] = {
            "before": round(raw_before, 1),
            "after": round(raw_after, 1),
            "mean": round(raw, 1),
        }
        report["ingest_embedded"] = embedded | {"ratio": round(embedded["texts_per_s"] / raw, 3)}
        if server is not None:
            report["ingest_server"] = server | {"ratio": round(server["texts_per_s"] / raw, 3)}
        if not args.skip_startup:
            report["startup_one_chunk"] = startup(tmp, args.startup_runs)
        report["load_avg_end"] = os.getloadavg()[0]
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
