"""Numeric variants of the local model side by side: speed and retrieval quality.

    nice python benchmarks/model_throughput.py --variants [--docs 1000 --claims 200]

(run through model_throughput.py, or directly). A SciFact subset is written to a temp dir:
the first `--claims` training claims, every abstract judged relevant to them, and other
abstracts up to `--docs` in all. The chunk texts a cold ingest embeds are recorded once;
each candidate then embeds the first `--speed-texts` of them (texts/s, after a warm-up),
and the candidates marked for quality ingest the whole subset into a fresh data dir and are
evaluated on the claims (nDCG@10, dense and hybrid; `api.evaluate`). sentence-transformers
(torch fp32, batch 32) is measured on the same texts.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chromasync import api
from chromasync.embed import Embedder
from chromasync.embed.local import LocalEmbedder

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora" / "scifact"


@dataclass
class Candidate:
    name: str
    make: Callable[[Path], Any]  # work dir -> embedder (LocalEmbedder or an ST wrapper)
    quality: bool = True


def write_subset(out: Path, docs: int, claims: int) -> tuple[Path, Path]:
    rows = [json.loads(x) for x in (SCIFACT / "train_queries.jsonl").open()][:claims]
    wanted = {d for r in rows for d in r["relevant"]}
    corpus = out / "scifact-subset"
    corpus.mkdir(parents=True)
    extra = max(docs - len(wanted), 0)
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as src:
        for line in src:
            doc = json.loads(line)
            keep = doc["id"] in wanted
            if not keep and extra > 0:
                keep, extra = True, extra - 1
            if keep:
                text = f"# {doc['title']}\n\n{doc['text']}\n"
                (corpus / f"{doc['id']}.md").write_text(text, encoding="utf-8")
    queries = out / "claims.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return corpus, queries


def _session(model: LocalEmbedder, path: Path) -> LocalEmbedder:
    import onnxruntime as ort

    model._load()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if model.threads:
        options.intra_op_num_threads = model.threads
    model._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return model


def fused(work: Path, quantized: bool = False) -> LocalEmbedder:
    """The export after ONNX Runtime's transformer optimizer (attention, LayerNorm and GELU
    fusion), optionally quantized afterwards."""
    from onnxruntime.transformers.optimizer import optimize_model

    model = LocalEmbedder(variant="fp32")
    target = work / "fused.onnx"
    if not target.is_file():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimized = optimize_model(
                str(model.onnx_path()), model_type="bert", num_heads=12, hidden_size=384
            )
            optimized.save_model_to_file(str(target))
    if quantized:
        q = work / "fused-int8.onnx"
        quant(target, q, per_channel=True)
        target = q
    return _session(model, target)


def quant(
    source: Path,
    target: Path,
    per_channel: bool,
    ops: list[str] | None = None,
    unsigned: bool = False,
) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if target.is_file():
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_dynamic(
            str(source),
            str(target),
            per_channel=per_channel,
            op_types_to_quantize=ops if ops is not None else ["MatMul"],
            weight_type=QuantType.QUInt8 if unsigned else QuantType.QInt8,
            # the fused graph's contrib ops defeat shape inference: their outputs are fp32
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )


def int8_variant(work: Path, name: str, **kwargs: Any) -> LocalEmbedder:
    model = LocalEmbedder(variant="fp32")
    target = work / f"{name}.onnx"
    quant(model.onnx_path(), target, **kwargs)
    return _session(model, target)


class SentenceTransformers(Embedder):
    """sentence-transformers, torch fp32, batch 32: the peers' way to run the model."""

    name = "st"
    model_id: str = ""  # the wrapped model's, set below
    dimension: int = 0
    tokenizer_path: str | None = None

    def __init__(self) -> None:
        self.inner = LocalEmbedder(backend="torch", variant="fp32")
        self.model_id = self.inner.model_id
        self.max_tokens = self.inner.max_tokens
        self.batch_size = 32
        self.dimension = self.inner.dimension
        self.tokenizer_path = self.inner.tokenizer_path

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        model = self.inner._load_torch("cpu")
        vectors = model.encode(list(texts), batch_size=32, normalize_embeddings=True)
        return [v.tolist() for v in vectors]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class TorchInt8(SentenceTransformers):
    """The same model in torch with its Linear layers quantized to int8 per output channel
    (dynamic quantization: fbgemm kernels on x86), batch 32."""

    name = "torch-int8"

    def __init__(self) -> None:
        super().__init__()
        import torch
        from torch.ao.quantization import per_channel_dynamic_qconfig

        model = self.inner._load_torch("cpu")
        self.quantized = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
            model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
        )

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self.quantized.encode(list(texts), batch_size=32, normalize_embeddings=True)
        return [v.tolist() for v in vectors]


class TracedBf16(SentenceTransformers):
    """The bf16 variant until 2026-12-01: a TorchScript trace of transformers' BERT (pooling
    included) under bf16 autocast, batched by tokens exactly as the encoder is."""

    name = "torch-bf16-trace"

    def __init__(self) -> None:
        super().__init__()
        import torch

        from chromasync.embed.making import pooled_module

        pooled = pooled_module(self.inner._load_torch("cpu")[0].auto_model.eval())
        sample = torch.ones(2, 8, dtype=torch.long)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            self.traced = torch.jit.trace(pooled, (sample, sample, sample * 0), check_trace=False)
        self.tokens = LocalEmbedder(variant="bf16")
        self.tokens._tokenizer = self.tokens._make_tokenizer()

    def _run(self, ids: Any, mask: Any, types: Any) -> Any:
        import torch

        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            out = self.traced(*(torch.from_numpy(a) for a in (ids, mask, types)))
        return out.float().numpy()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.tokens._embed_batched(list(texts), self._run)


CANDIDATES = [
    Candidate(
        "sentence-transformers torch fp32, batch 32", lambda w: SentenceTransformers(), False
    ),
    Candidate(
        "onnx fp32, batch 32 texts (before)",
        lambda w: LocalEmbedder(variant="fp32", batch_tokens=10**9),
    ),
    Candidate("onnx fp32, batches of 8192 tokens", lambda w: LocalEmbedder(variant="fp32"), False),
    Candidate("onnx fp32 fused (transformers optimizer)", fused, False),
    Candidate(
        "onnx int8 per-channel MatMul, 32 texts",
        lambda w: LocalEmbedder(variant="int8", batch_tokens=10**9),
        False,
    ),
    Candidate(
        "onnx int8 per-channel MatMul, 8192 tokens [default without AMX]",
        lambda w: LocalEmbedder(variant="int8"),
    ),
    Candidate("  + intra_op threads 2", lambda w: LocalEmbedder(variant="int8", threads=2), False),
    Candidate(
        "onnx int8 per-tensor MatMul", lambda w: int8_variant(w, "pt", per_channel=False), False
    ),
    Candidate("onnx int8 fused graph", lambda w: fused(w, quantized=True), False),
    Candidate("torch int8 per-channel Linear (dynamic), batch 32", lambda w: TorchInt8()),
    Candidate(
        "torch bf16 autocast, plain-torch encoder, 8192 tokens [default with AMX]",
        lambda w: LocalEmbedder(variant="bf16"),
    ),
    Candidate(
        "torch bf16 autocast, TorchScript trace of transformers (before)",
        lambda w: TracedBf16(),
        False,
    ),
]
EXTRA = [  # --all-candidates
    Candidate(
        "  + batches of 4096 tokens",
        lambda w: LocalEmbedder(variant="int8", batch_tokens=4096),
        False,
    ),
    Candidate(
        "  + batches of 16384 tokens",
        lambda w: LocalEmbedder(variant="int8", batch_tokens=16384),
        False,
    ),
    Candidate(
        "onnx uint8 weights per-channel MatMul",
        lambda w: int8_variant(w, "u8", per_channel=True, unsigned=True),
        False,
    ),
]


def measure(docs: int, claims: int, speed_texts: int, quality: bool) -> dict[str, Any]:
    from model_throughput import Recorder, settings_for  # the chunk texts an ingest embeds

    tmp = Path(tempfile.mkdtemp(prefix="chromasync-variants-"))
    corpus, claims_file = write_subset(tmp, docs, claims)
    base = LocalEmbedder(variant="fp32")
    recorder = Recorder(base)
    api.ingest([api.source_for(corpus)], settings_for(tmp / "plan", None), embedder=recorder)
    texts = recorder.texts
    sample = texts[:speed_texts]
    queries = api.load_queries(claims_file)
    report: dict[str, Any] = {
        "docs": sum(1 for _ in corpus.glob("*.md")),
        "claims": len(queries),
        "chunks": len(texts),
        "speed_texts": len(sample),
        "cpus": os.cpu_count(),
        "load_avg_start": os.getloadavg()[0],
        "rows": [],
    }
    for n, cand in enumerate(CANDIDATES):
        row: dict[str, Any] = {"name": cand.name}
        try:
            model = cand.make(tmp)
            model.embed_documents(sample[:32])  # load and warm up
            began = time.perf_counter()
            model.embed_documents(sample)
            row["texts_per_s"] = round(len(sample) / (time.perf_counter() - began), 1)
            if quality and cand.quality:
                settings = settings_for(tmp / f"data-{n}", None)
                api.ingest([api.source_for(corpus)], settings, embedder=model)
                ev = api.evaluate(queries, settings, embedder=model, modes=("dense", "hybrid"))
                row["ndcg_dense"] = round(ev.modes["dense"]["ndcg"], 4)
                row["ndcg_hybrid"] = round(ev.modes["hybrid"]["ndcg"], 4)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
        report["rows"].append(row)
        print(json.dumps(row), flush=True)
    st = report["rows"][0].get("texts_per_s")
    for row in report["rows"]:
        if st and row.get("texts_per_s"):
            row["x_st"] = round(row["texts_per_s"] / st, 2)
    report["load_avg_end"] = os.getloadavg()[0]
    return report


#: Candidates timed against each other round by round (`interleaved`).
INTERLEAVED = [
    CANDIDATES[0],  # sentence-transformers
    CANDIDATES[2],  # onnx fp32, token batches
    CANDIDATES[5],  # onnx int8 [default without AMX]
    CANDIDATES[10],  # torch bf16 encoder [default with AMX]
    CANDIDATES[11],  # torch bf16 trace (before)
]


def interleaved(
    docs: int, rounds: int, per_round: int, which: list[int] | None = None
) -> dict[str, Any]:
    """Each candidate embeds the same `per_round` chunk texts in every round, the order of
    candidates rotated each round, so machine load drifts into all of them alike: texts/s
    in wall time and per CPU-second of this process (ONNX Runtime's spinning threads count)."""
    from model_throughput import Recorder, settings_for

    tmp = Path(tempfile.mkdtemp(prefix="chromasync-interleaved-"))
    corpus, _claims = write_subset(tmp, docs, 0)
    recorder = Recorder(LocalEmbedder(variant="fp32"))
    api.ingest([api.source_for(corpus)], settings_for(tmp / "plan", None), embedder=recorder)
    texts = recorder.texts
    chosen = [CANDIDATES[i] for i in which] if which else INTERLEAVED
    models = [cand.make(tmp) for cand in chosen]
    for model in models:
        model.embed_documents(texts[:32])  # load and warm up
    wall = [0.0] * len(models)
    cpu = [0.0] * len(models)
    done = 0
    load_start = os.getloadavg()[0]
    for r in range(rounds):
        batch = [texts[(r * per_round + i) % len(texts)] for i in range(per_round)]
        order = list(range(len(models)))
        order = order[r % len(order) :] + order[: r % len(order)]
        for n in order:
            w, c = time.perf_counter(), time.process_time()
            models[n].embed_documents(batch)
            wall[n] += time.perf_counter() - w
            cpu[n] += time.process_time() - c
        done += per_round
    rows = []
    for cand, w, c in zip(chosen, wall, cpu, strict=True):
        rows.append(
            {"name": cand.name, "texts_per_s": round(done / w, 2), "per_cpu_s": round(done / c, 2)}
        )
    for row in rows:
        row["x_st"] = round(row["texts_per_s"] / rows[0]["texts_per_s"], 2)
        row["x_st_cpu"] = round(row["per_cpu_s"] / rows[0]["per_cpu_s"], 2)
    return {
        "texts": done,
        "rounds": rounds,
        "load_avg_start": load_start,
        "load_avg_end": os.getloadavg()[0],
        "rows": rows,
    }


def table(report: dict[str, Any]) -> str:
    lines = [
        "| candidate | texts/s | x ST | nDCG@10 dense | nDCG@10 hybrid |",
        "|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        cells = [
            r.get("texts_per_s", r.get("error", "")),
            r.get("x_st", ""),
            r.get("ndcg_dense", "-"),
            r.get("ndcg_hybrid", "-"),
        ]
        lines.append(f"| {r['name'].strip()} | " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)
