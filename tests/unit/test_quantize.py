"""The int8 quantizer (embed/quantize.py) against onnxruntime's own: the same graph, the
same numbers, without the `onnx` package (the tests build their models with it, from `dev`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import chromasync
from chromasync.embed.quantize import quantize_int8
from chromasync.errors import EmbeddingError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402


def _model(path: Path) -> None:
    """A small graph with what a transformer export holds: two MatMuls sharing their
    activation, one fed by another's output, one whose weights are a graph value (left
    float), weights in raw_data and in float_data, a column of zeros, and fields the
    quantizer does not declare (doc strings, metadata, value_info)."""
    rng = np.random.default_rng(7)
    w1 = rng.normal(size=(8, 6)).astype(np.float32)
    w1[:, 2] = 0  # a zero column: scale 1, as onnxruntime makes it
    w2 = rng.normal(size=(8, 6)).astype(np.float32)
    w3 = rng.normal(size=(6, 4)).astype(np.float32)
    initializers = [
        helper.make_tensor("w1", TensorProto.FLOAT, w1.shape, w1.tobytes(), raw=True),
        helper.make_tensor("w2", TensorProto.FLOAT, w2.shape, w2.flatten().tolist()),
        helper.make_tensor("w3", TensorProto.FLOAT, w3.shape, w3.tobytes(), raw=True),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["y1"], name="first"),
        helper.make_node("MatMul", ["x", "w2"], ["y2"], name="second"),
        helper.make_node("MatMul", ["y1", "w3"], ["y3"]),  # no name: named from its output
        helper.make_node("Transpose", ["y2"], ["t2"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["y1", "t2"], ["y4"], name="activations"),
    ]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes,
        "tiny",
        [value("x", TensorProto.FLOAT, [2, 3, 8])],
        [
            value("y2", TensorProto.FLOAT, [2, 3, 6]),
            value("y3", TensorProto.FLOAT, [2, 3, 4]),
            value("y4", TensorProto.FLOAT, [2, 3, 3]),
        ],
        initializers,
        doc_string="kept as it was",
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    helper.set_model_props(model, {"made-by": "the test"})
    onnx.save(model, str(path))


def _run(path: Path, x: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def onnxruntime_quantized(source: Path, target: Path) -> None:
    """onnxruntime's quantizer as chromasync called it, less the shape information its
    shape inference adds (which only steers the session's optimizer)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(source),
        str(target),
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        weight_type=QuantType.QInt8,
    )
    made = onnx.load(str(target))
    del made.graph.value_info[:]
    onnx.save(made, str(target))


def test_the_same_graph_and_numbers_as_onnxruntime(tmp_path: Path) -> None:
    source, ours, theirs = tmp_path / "fp32.onnx", tmp_path / "ours.onnx", tmp_path / "ort.onnx"
    _model(source)
    assert quantize_int8(source, ours) == 3
    onnxruntime_quantized(source, theirs)
    x = np.random.default_rng(3).normal(size=(2, 3, 8)).astype(np.float32)
    got, expected, fp32 = _run(ours, x), _run(theirs, x), _run(source, x)
    for mine, reference, exact in zip(got, expected, fp32, strict=True):
        assert np.array_equal(mine, reference)
        cosine = float((mine * exact).sum() / np.linalg.norm(mine) / np.linalg.norm(exact))
        assert 0.99 < cosine < 1 - 1e-7  # int8: close to fp32, not equal
    model = onnx.load(str(ours))
    ops = Counter(n.op_type for n in model.graph.node)
    assert ops["MatMulInteger"] == 3 and ops["MatMul"] == 1  # activations x activations stay
    assert ops["DynamicQuantizeLinear"] == 2  # x once for both of its MatMuls, then y1
    names = {t.name for t in model.graph.initializer}
    assert not names & {"w1", "w2", "w3"}  # the float weights are gone
    assert {"w1_quantized", "w1_scale", "w1_zero_point"} <= names
    assert model.graph.doc_string == "kept as it was"
    assert {p.key: p.value for p in model.metadata_props} == {"made-by": "the test"}
    assert [o.name for o in model.graph.output] == ["y2", "y3", "y4"]
    onnx.checker.check_model(model)


def test_the_softmax_nan_guard_is_dropped_with_the_same_numbers(tmp_path: Path) -> None:
    """torch's export of scaled_dot_product_attention guards each softmax with
    Where(IsNaN(s), 0, s): dropped (a softmax of a row with a finite entry is never NaN),
    with onnxruntime's numbers, guard included, unchanged; a guard of anything else stays."""
    w = np.random.default_rng(4).normal(size=(8, 6)).astype(np.float32)
    value = helper.make_tensor_value_info
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["s"], axis=-1),
        helper.make_node("IsNaN", ["s"], ["nan"]),
        helper.make_node("Constant", [], ["c"], value=zero),
        helper.make_node("Where", ["nan", "c", "s"], ["guarded"]),
        helper.make_node("MatMul", ["guarded", "x"], ["y"]),  # activations: stays float
        helper.make_node("IsNaN", ["x"], ["x_nan"]),  # not a softmax: its guard stays
        helper.make_node("Where", ["x_nan", "c", "x"], ["x_kept"]),
    ]
    graph = helper.make_graph(
        nodes,
        "attention",
        [value("x", TensorProto.FLOAT, [2, 6, 8])],
        [value("y", TensorProto.FLOAT, [2, 6, 8]), value("x_kept", TensorProto.FLOAT, [2, 6, 8])],
        [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.tobytes(), raw=True)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    source, ours, theirs = tmp_path / "fp32.onnx", tmp_path / "ours.onnx", tmp_path / "ort.onnx"
    onnx.save(model, str(source))
    assert quantize_int8(source, ours) == 1
    onnxruntime_quantized(source, theirs)
    made = onnx.load(str(ours))
    ops = Counter(n.op_type for n in made.graph.node)
    assert ops["IsNaN"] == ops["Where"] == ops["Constant"] == 1  # x's guard, and its zero
    assert all("guarded" not in n.input for n in made.graph.node)
    x = np.random.default_rng(5).normal(size=(2, 6, 8)).astype(np.float32)
    for mine, reference in zip(_run(ours, x), _run(theirs, x), strict=True):
        assert np.array_equal(mine, reference)
    onnx.checker.check_model(made)


def test_needs_no_onnx_package(tmp_path: Path) -> None:
    """The light install has no `onnx`: the quantizer runs with it made unimportable."""
    source, target = tmp_path / "fp32.onnx", tmp_path / "int8.onnx"
    _model(source)
    script = (
        "import sys; sys.modules['onnx'] = None\n"
        "from pathlib import Path\n"
        "from chromasync.embed.quantize import quantize_int8\n"
        f"print(quantize_int8(Path({str(source)!r}), Path({str(target)!r})))\n"
        "assert sys.modules['onnx'] is None\n"
    )
    src = str(Path(chromasync.__file__).parent.parent)  # this tree, not an installed copy
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "PYTHONPATH": src},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3" and target.is_file()


def test_clear_errors_and_no_partial_file(tmp_path: Path) -> None:
    junk, target = tmp_path / "junk.onnx", tmp_path / "out" / "int8.onnx"
    junk.write_bytes(b"\xff\xff\xff not a model")
    with pytest.raises(EmbeddingError, match="not an ONNX model"):
        quantize_int8(junk, target)
    plain = tmp_path / "plain.onnx"
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    onnx.save(helper.make_model(graph), str(plain))
    with pytest.raises(EmbeddingError, match="no MatMul with float weights"):
        quantize_int8(plain, target)
    assert not target.exists() and not list(tmp_path.glob("out/*"))
