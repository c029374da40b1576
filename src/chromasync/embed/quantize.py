"""int8 quantization of an ONNX model, without the `onnx` package (29 MiB the light install
leaves out): the model file is read and written with protobuf, which onnxruntime brings.

Design notes: docs/internals.md, `embed/quantize.py`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from ..errors import EmbeddingError

#: onnx.proto's TensorProto.DataType values used here.
_FLOAT, _UINT8, _INT8 = 1, 2, 3
#: TensorProto.DataLocation.EXTERNAL: the values live in another file (left as they are).
_EXTERNAL = 1

# (message, [(field, number, type, repeated, message type)]); types are FieldDescriptorProto's
_INT64, _INT32, _STRING, _MESSAGE, _BYTES, _FLOAT_FIELD = 3, 5, 9, 11, 12, 2
_SCHEMA: tuple[tuple[str, tuple[tuple[str, int, int, bool, str], ...]], ...] = (
    ("ModelProto", (("graph", 7, _MESSAGE, False, "GraphProto"),)),
    (
        "GraphProto",
        (
            ("node", 1, _MESSAGE, True, "NodeProto"),
            ("initializer", 5, _MESSAGE, True, "TensorProto"),
            ("output", 12, _MESSAGE, True, "ValueInfoProto"),
        ),
    ),
    ("ValueInfoProto", (("name", 1, _STRING, False, ""),)),
    (
        "NodeProto",
        (
            ("input", 1, _STRING, True, ""),
            ("output", 2, _STRING, True, ""),
            ("name", 3, _STRING, False, ""),
            ("op_type", 4, _STRING, False, ""),
            ("attribute", 5, _MESSAGE, True, "AttributeProto"),
            ("domain", 7, _STRING, False, ""),
        ),
    ),
    (
        "AttributeProto",
        (
            ("name", 1, _STRING, False, ""),
            ("i", 3, _INT64, False, ""),
            ("type", 20, _INT32, False, ""),
        ),
    ),
    (
        "TensorProto",
        (
            ("dims", 1, _INT64, True, ""),
            ("data_type", 2, _INT32, False, ""),
            ("float_data", 4, _FLOAT_FIELD, True, ""),
            ("name", 8, _STRING, False, ""),
            ("raw_data", 9, _BYTES, False, ""),
            ("data_location", 14, _INT32, False, ""),
        ),
    ),
)
_ATTRIBUTE_INT = 2  # AttributeProto.AttributeType.INT


def _messages() -> dict[str, Any]:
    """The message classes of the schema above, in a pool of their own."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    package = "chromasync.onnx_subset"
    file = descriptor_pb2.FileDescriptorProto(
        name="chromasync_onnx_subset.proto", package=package, syntax="proto2"
    )
    for name, fields in _SCHEMA:
        message = file.message_type.add(name=name)
        for field, number, kind, repeated, type_name in fields:
            declared = message.field.add(name=field, number=number, type=kind)
            declared.label = declared.LABEL_REPEATED if repeated else declared.LABEL_OPTIONAL
            if type_name:
                declared.type_name = f".{package}.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
        for name, _ in _SCHEMA
    }


def quantize_int8(source: Path, target: Path) -> int:
    """Write the int8 model of the fp32 ONNX model `source` to `target`, atomically; the
    number of `MatMul`s quantized. EmbeddingError when `source` is not a model or has no
    `MatMul` with float weights."""
    types = _messages()
    model = types["ModelProto"]()
    try:
        model.ParseFromString(source.read_bytes())
    except Exception as exc:  # protobuf's DecodeError, or a file that is not a model
        raise EmbeddingError(f"{source} is not an ONNX model: {exc}") from exc
    _drop_nan_guards(model.graph)
    count = _rewrite_graph(model.graph, types)
    if not count:
        raise EmbeddingError(f"{source}: no MatMul with float weights to quantize")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".partial", delete=False) as out:
        try:
            out.write(model.SerializeToString())
            out.flush()
            os.fsync(out.fileno())
        except BaseException:
            os.unlink(out.name)
            raise
    os.replace(out.name, target)
    return count


def _drop_nan_guards(graph: Any) -> int:
    """Remove, in place, each `Where(IsNaN(s), c, s)` whose `s` is a `Softmax` output
    (its consumers read `s`; an `IsNaN` or `Constant` left unread goes too); the number
    removed."""
    softmax = {out for node in graph.node if node.op_type == "Softmax" for out in node.output}
    tested = {node.output[0]: node.input[0] for node in graph.node if node.op_type == "IsNaN"}
    outputs = {value.name for value in graph.output}
    alias: dict[str, str] = {}
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3 or node.output[0] in outputs:
            continue
        condition, _, value = node.input
        if tested.get(condition) == value and value in softmax:
            alias[node.output[0]] = value
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in alias:
                node.input[i] = alias[name]
    kept = [node for node in graph.node if node.output[0] not in alias]
    read = {name for node in kept for name in node.input} | outputs
    kept = [n for n in kept if n.op_type not in ("IsNaN", "Constant") or n.output[0] in read]
    del graph.node[:]
    graph.node.extend(kept)
    return len(alias)


def _rewrite_graph(graph: Any, types: dict[str, Any]) -> int:
    """Replace, in place, each `MatMul` of `graph` whose weights are a float initializer by
    the int8 pattern of docs/internals.md; the number replaced."""
    weights = {t.name: t for t in graph.initializer if _float_matrix(t)}
    quantized: dict[str, tuple[str, str, str]] = {}  # weight -> (values, scale, zero point)
    activations: set[str] = set()  # activations already given a DynamicQuantizeLinear
    nodes: list[Any] = []
    count = 0
    for node in graph.node:
        if node.op_type != "MatMul" or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
            nodes.append(node)
            continue
        source, weight = node.input
        if weight not in weights:
            nodes.append(node)
            continue
        if weight not in quantized:
            quantized[weight] = _quantize_weight(weights[weight], graph, types)
        values, scale, zero = quantized[weight]
        if source not in activations:
            activations.add(source)
            nodes.append(
                _node(
                    types,
                    "DynamicQuantizeLinear",
                    [source],
                    [f"{source}_quantized", f"{source}_scale", f"{source}_zero_point"],
                    f"{source}_QuantizeLinear",
                )
            )
        output = node.output[0]
        base = f"{node.name}_quant" if node.name else f"{output}_quant"
        integer = f"{output}_output_quantized"
        cast = _node(types, "Cast", [integer], [f"{integer}_cast_output"], f"{integer}_cast")
        to = cast.attribute.add(name="to", i=_FLOAT)
        to.type = _ATTRIBUTE_INT
        nodes += [
            _node(
                types,
                "MatMulInteger",
                [f"{source}_quantized", values, f"{source}_zero_point", zero],
                [integer],
                base,
            ),
            cast,
            _node(
                types,
                "Mul",
                [f"{source}_scale", scale],
                [f"{base}_scales_mul:0"],
                f"{base}_scales_mul",
            ),
            _node(
                types,
                "Mul",
                [f"{integer}_cast_output", f"{base}_scales_mul:0"],
                [output],
                f"{base}_output_scale_mul",
            ),
        ]
        count += 1
    used = {name for node in nodes for name in node.input}
    kept = [t for t in graph.initializer if t.name not in quantized or t.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return count


def _quantize_weight(tensor: Any, graph: Any, types: dict[str, Any]) -> tuple[str, str, str]:
    """Add the int8 values, scales and zero points of the float matrix `tensor` to `graph`
    (per column, symmetric, as onnxruntime's quantizer makes them); their names."""
    import numpy as np

    rows, columns = tensor.dims
    if tensor.raw_data:
        matrix = np.frombuffer(tensor.raw_data, dtype="<f4").reshape(rows, columns)
    else:
        matrix = np.asarray(tensor.float_data, dtype=np.float32).reshape(rows, columns)
    absmax = np.maximum(-matrix.min(axis=0), matrix.max(axis=0)).clip(min=0).astype(np.float64)
    exact = absmax * 2 / 254  # onnxruntime's (rmax - rmin) / (qmax - qmin), in float64
    scale = np.where(exact < np.finfo(np.float32).tiny, 1.0, exact).astype(np.float32)
    values = np.clip(np.round(matrix / scale), -128, 127).astype(np.int8)
    name = tensor.name
    added = (
        _tensor(types, f"{name}_quantized", _INT8, [rows, columns], values.tobytes()),
        _tensor(types, f"{name}_scale", _FLOAT, [columns], scale.astype("<f4").tobytes()),
        _tensor(types, f"{name}_zero_point", _INT8, [columns], bytes(columns)),
    )
    graph.initializer.extend(added)
    return added[0].name, added[1].name, added[2].name


def _float_matrix(tensor: Any) -> bool:
    """A float initializer of two dimensions whose values are in the file."""
    return (
        tensor.data_type == _FLOAT
        and len(tensor.dims) == 2
        and tensor.data_location != _EXTERNAL
        and (
            len(tensor.raw_data) == 4 * tensor.dims[0] * tensor.dims[1]
            or len(tensor.float_data) == tensor.dims[0] * tensor.dims[1]
        )
    )


def _node(types: dict[str, Any], op: str, inputs: list[str], outputs: list[str], name: str) -> Any:
    return types["NodeProto"](op_type=op, input=inputs, output=outputs, name=name)


def _tensor(types: dict[str, Any], name: str, kind: int, dims: list[int], raw: bytes) -> Any:
    return types["TensorProto"](name=name, data_type=kind, dims=dims, raw_data=raw)


__all__ = ["quantize_int8"]
