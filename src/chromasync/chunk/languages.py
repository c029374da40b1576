"""What a declaration is in each language the code chunker knows (tree-sitter node types).

Design notes: docs/internals.md, `chunk/languages.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Node = Any  # tree_sitter.Node; the bindings' types are not needed here


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    grammar: str
    declarations: frozenset[str]
    containers: frozenset[str] = frozenset()
    wrappers: frozenset[str] = frozenset()
    data: bool = False


def _spec(
    grammar: str,
    declarations: str,
    containers: str = "",
    wrappers: str = "",
    data: bool = False,
) -> LanguageSpec:
    return LanguageSpec(
        grammar,
        frozenset(declarations.split()),
        frozenset(containers.split()),
        frozenset(wrappers.split()),
        data,
    )


_JS_DECLARATIONS = (
    "function_declaration generator_function_declaration class_declaration "
    "abstract_class_declaration interface_declaration type_alias_declaration enum_declaration "
    "method_definition lexical_declaration variable_declaration internal_module module "
    "abstract_method_signature method_signature"
)
_JS_CONTAINERS = (
    "class_declaration abstract_class_declaration interface_declaration internal_module"
)
_C_DECLARATIONS = (
    "function_definition struct_specifier union_specifier enum_specifier type_definition"
)
_CPP_DECLARATIONS = _C_DECLARATIONS + (
    " class_specifier namespace_definition template_declaration linkage_specification"
)

LANGUAGES: dict[str, LanguageSpec] = {
    "python": _spec(
        "python",
        "function_definition class_definition decorated_definition",
        "class_definition",
        "decorated_definition",
    ),
    "javascript": _spec("javascript", _JS_DECLARATIONS, _JS_CONTAINERS, "export_statement"),
    "typescript": _spec("typescript", _JS_DECLARATIONS, _JS_CONTAINERS, "export_statement"),
    "tsx": _spec("tsx", _JS_DECLARATIONS, _JS_CONTAINERS, "export_statement"),
    "go": _spec("go", "function_declaration method_declaration type_declaration"),
    "rust": _spec(
        "rust",
        "function_item struct_item enum_item union_item trait_item impl_item mod_item "
        "macro_definition type_item function_signature_item",
        "impl_item trait_item mod_item",
    ),
    "java": _spec(
        "java",
        "class_declaration interface_declaration enum_declaration record_declaration "
        "annotation_type_declaration method_declaration constructor_declaration",
        "class_declaration interface_declaration enum_declaration record_declaration",
    ),
    "c": _spec("c", _C_DECLARATIONS, "preproc_ifdef preproc_if"),
    "cpp": _spec(
        "cpp",
        _CPP_DECLARATIONS,
        "class_specifier struct_specifier namespace_definition linkage_specification "
        "preproc_ifdef preproc_if",
        "template_declaration",
    ),
    "csharp": _spec(
        "csharp",
        "class_declaration struct_declaration interface_declaration enum_declaration "
        "record_declaration namespace_declaration method_declaration constructor_declaration "
        "delegate_declaration",
        "class_declaration struct_declaration interface_declaration record_declaration "
        "namespace_declaration",
    ),
    "ruby": _spec("ruby", "method singleton_method class module", "class module"),
    "php": _spec(
        "php",
        "function_definition class_declaration interface_declaration trait_declaration "
        "enum_declaration method_declaration",
        "class_declaration interface_declaration trait_declaration enum_declaration",
    ),
    "bash": _spec("bash", "function_definition"),
    "css": _spec("css", "rule_set media_statement supports_statement keyframes_statement at_rule"),
    "kotlin": _spec(
        "kotlin",
        "class_declaration object_declaration companion_object function_declaration type_alias",
        "class_declaration object_declaration companion_object",
    ),
    "lua": _spec("lua", "function_declaration"),
    "swift": _spec(
        "swift",
        "class_declaration protocol_declaration function_declaration init_declaration "
        "typealias_declaration",
        "class_declaration protocol_declaration",
    ),
    "json": _spec("json", "pair", "pair", data=True),
    "yaml": _spec("yaml", "block_mapping_pair", "block_mapping_pair", data=True),
    "toml": _spec("toml", "table table_array_element pair", "table table_array_element", data=True),
    "xml": _spec("xml", "element", "element", data=True),
}
#: grammar -> (module of its official package, the function returning its language).
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),  # PHP with its HTML text, as files are
    "bash": ("tree_sitter_bash", "language"),
    "css": ("tree_sitter_css", "language"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "lua": ("tree_sitter_lua", "language"),
    "swift": ("tree_sitter_swift", "language"),
    "json": ("tree_sitter_json", "language"),
    "yaml": ("tree_sitter_yaml", "language"),
    "toml": ("tree_sitter_toml", "language"),
    "xml": ("tree_sitter_xml", "language_xml"),
}
COMMENTS = frozenset(
    {"comment", "line_comment", "block_comment", "multiline_comment", "marginalia", "Comment"}
)
#: JavaScript `const f = () => ...` is a declaration only when the value is a function/class.
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "class"}
)


def text_of(node: Node, source: bytes) -> str:
    return str(source[node.start_byte : node.end_byte].decode("utf-8", "replace"))


def unwrap(node: Node, spec: LanguageSpec) -> Node:
    """The declaration inside a wrapper (decorator, export, template), else the node."""
    while node.type in spec.wrappers:
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if inner is None:
            named = [c for c in node.named_children if c.type not in COMMENTS]
            inner = named[-1] if named else None
        if inner is None:
            return node
        node = inner
    return node


def declaration_name(node: Node, spec: LanguageSpec, source: bytes) -> str | None:
    """The name of the declaration `node`, or None when it is not a declaration."""
    inner = unwrap(node, spec)
    kind = inner.type
    if kind not in spec.declarations:
        return None
    if kind in ("lexical_declaration", "variable_declaration"):
        for declarator in inner.named_children:
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                return _field_text(declarator, "name", source)
        return None
    if kind == "method_declaration" and spec.grammar == "go":
        receiver = inner.child_by_field_name("receiver")
        owner = _innermost_type(receiver, source) if receiver is not None else None
        name = _field_text(inner, "name", source)
        return f"{owner}.{name}" if owner and name else name
    if kind == "type_declaration":
        for child in inner.named_children:
            if child.type in ("type_spec", "type_alias"):
                return _field_text(child, "name", source)
        return None
    if kind == "impl_item" or (kind == "type_alias" and spec.grammar == "kotlin"):
        return _field_text(inner, "type", source)
    if kind == "init_declaration":
        return "init"
    if spec.grammar in ("css", "xml"):
        return _head(inner, spec.grammar, source)
    if kind in ("function_definition", "type_definition") and spec.grammar in ("c", "cpp"):
        return _declarator_name(inner, source)
    if kind == "pair" and spec.grammar == "json":
        key = inner.child_by_field_name("key")
        return text_of(key, source).strip("\"'") if key is not None else None
    if kind in ("block_mapping_pair", "pair", "table", "table_array_element"):
        key = inner.child_by_field_name("key")
        if key is None:
            keys = [c for c in inner.named_children if c.type.endswith("key")]
            key = keys[0] if keys else None
        return _one_line(text_of(key, source)).strip("\"'") if key is not None else None
    return _field_text(inner, "name", source) or _field_text(inner, "declarator", source)


def members(node: Node, spec: LanguageSpec) -> list[Node]:
    """The member nodes of a container (empty when `node` holds no members)."""
    inner = unwrap(node, spec)
    if inner.type not in spec.containers:
        return []
    if inner.type in ("preproc_ifdef", "preproc_if"):
        skip = {inner.child_by_field_name("name"), inner.child_by_field_name("condition")}
        return [c for c in inner.named_children if c not in skip]
    if spec.data:
        if inner.type == "element":
            return _elements(inner)
        if inner.type in ("table", "table_array_element"):
            return [c for c in inner.named_children if c.type == "pair"]
        value = inner.child_by_field_name("value")
        while value is not None and value.type in ("block_node", "flow_node"):
            value = value.named_children[0] if value.named_children else None
        if value is None or value.type not in ("object", "block_mapping"):
            return []
        return [c for c in value.named_children if c.type in spec.declarations]
    body = inner.child_by_field_name("body")
    if body is None:
        bodies = [c for c in inner.named_children if c.type.endswith(("body", "list"))]
        body = bodies[-1] if bodies else None
    return list(body.named_children) if body is not None else []


def top_level(root: Node, spec: LanguageSpec) -> list[Node]:
    """The nodes to chunk at the top of a file (a data file's root value's entries)."""
    if not spec.data:
        return list(root.named_children)
    if spec.grammar == "xml":
        element = root.child_by_field_name("root")
        return _elements(element) if element is not None else []
    node = root
    while node.named_children and node.type in ("document", "stream", "block_node"):
        if node.type == "document" and spec.grammar == "toml":
            break
        documents = [c for c in node.named_children if c.type not in COMMENTS]
        if len(documents) != 1:
            break
        node = documents[0]
    return list(node.named_children) if node is not root or spec.grammar == "toml" else []


def _head(node: Node, grammar: str, source: bytes) -> str | None:
    """A CSS rule's selectors or at-rule prelude, an XML element's tag."""
    if grammar == "css":
        block = next((c for c in node.named_children if c.type.endswith(("block", "list"))), None)
        end = block.start_byte if block is not None else node.end_byte
        return _one_line(source[node.start_byte : end].decode("utf-8", "replace")) or None
    if grammar == "xml":
        tag = node.named_children[0] if node.named_children else None  # STag, EmptyElemTag
        names = [c for c in tag.named_children if c.type == "Name"] if tag is not None else []
        return text_of(names[0], source) if names else None
    return None


def _elements(element: Node) -> list[Node]:
    """An XML element's child elements."""
    content = [c for c in element.named_children if c.type == "content"]
    return [c for c in content[0].named_children if c.type == "element"] if content else []


def _field_text(node: Node, field: str, source: bytes) -> str | None:
    child = node.child_by_field_name(field)
    return _one_line(text_of(child, source)) if child is not None else None


def _one_line(text: str) -> str:
    return " ".join(text.split())[:200]


def _innermost_type(node: Node, source: bytes) -> str | None:
    stack = [node]
    while stack:
        current = stack.pop(0)
        if current.type == "type_identifier":
            return text_of(current, source)
        stack.extend(current.named_children)
    return None


def _declarator_name(node: Node, source: bytes) -> str | None:
    """The identifier at the bottom of a C/C++ declarator chain (`*f(int)` -> `f`)."""
    current = node.child_by_field_name("declarator")
    while current is not None:
        if current.type in (
            "identifier",
            "field_identifier",
            "qualified_identifier",
            "destructor_name",
            "operator_name",
            "type_identifier",
        ):
            return _one_line(text_of(current, source))
        following = current.child_by_field_name("declarator")
        if following is None:
            named = current.named_children
            following = named[0] if named else None
        current = following
    return None
