"""Which file extensions are read, and as which kind of document (a source's defaults).

Design notes: docs/internals.md, `config/kinds.py`.
"""

from __future__ import annotations

MARKDOWN_EXTENSIONS = {".md", ".markdown", ".mdx", ".mdown", ".mkd"}
TEXT_EXTENSIONS = {".txt", ".rst", ".adoc", ".org", ".text"}
CODE_LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".sh": "bash",
    ".bash": "bash",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".css": "css",
    ".kt": "kotlin",
    ".lua": "lua",
    ".swift": "swift",
    ".xml": "xml",
    # chunked as text, at blank lines (`chunk.code`: a language without a `LanguageSpec`),
    # with `language` set: Vue has no packaged official grammar; SQL's (tree-sitter-sql,
    # 13 MiB) would take the plain install over 600 MB
    ".sql": "sql",
    ".vue": "vue",
}
#: Extensionless files read as text (compared case-blind: `Readme`, `LICENSE`, `copying`).
TEXT_FILE_NAMES = frozenset(
    {
        "readme",
        "license",
        "licence",
        "copying",
        "notice",
        "authors",
        "contributors",
        "contributing",
        "changelog",
        "changes",
        "history",
        "news",
        "install",
        "todo",
        "thanks",
        "credits",
        "maintainers",
        "patents",
    }
)
#: Documents read by default, and those a source opts into (`include_extensions`).
DOCUMENT_EXTENSIONS = {".pdf", ".docx"}
OPT_IN_DOCUMENT_EXTENSIONS = {".pptx", ".html", ".htm", ".xhtml"}
#: Known binary formats are counted as `binary` from their name alone, without a read.
BINARY_EXTENSIONS = {
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".webp",
    ".bmp",
    ".ico",
    ".tif",
    ".tiff",
    ".svgz",
    ".zip",
    ".gz",
    ".tgz",
    ".bz2",
    ".xz",
    ".7z",
    ".rar",
    ".tar",
    ".jar",
    ".woff",
    ".woff2",
    ".ttf",
    ".otf",
    ".eot",
    ".mp3",
    ".mp4",
    ".mov",
    ".avi",
    ".wav",
    ".ogg",
    ".flac",
    ".webm",
    ".exe",
    ".dll",
    ".so",
    ".dylib",
    ".o",
    ".a",
    ".class",
    ".pyc",
    ".wasm",
    ".sqlite",
    ".sqlite3",
    ".db",
    ".bin",
    ".psd",
    ".heic",
}
DEFAULT_EXTENSIONS = tuple(
    sorted(MARKDOWN_EXTENSIONS | TEXT_EXTENSIONS | set(CODE_LANGUAGES) | DOCUMENT_EXTENSIONS)
)
