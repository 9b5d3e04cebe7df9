"""A gazetteer of common technologies: the spellings people write, mapped to one canonical name each.

Names that are also ordinary English words ("React", "Flask", "Rust", "Swift") only match as written
with their capital; names that are too ambiguous even then ("Go", "Node", "Next") only match in an
unambiguous spelling ("Golang", "Node.js", "Next.js"). The list is deliberately closed: an unknown
technology is still caught as a code identifier or a file, just not typed `technology`.
"""

from __future__ import annotations

import re
from functools import cache

# canonical name -> extra spellings (matched case-insensitively; the canonical name itself is too).
_TECHNOLOGIES: dict[str, tuple[str, ...]] = {
    "Python": ("python3", "cpython"),
    "SQLite": ("sqlite3", "sqlite 3"),
    "PostgreSQL": ("postgres", "postgresql", "psql", "pg_dump"),
    "MySQL": ("mariadb",),
    "MongoDB": ("mongo",),
    "Redis": (),
    "Elasticsearch": ("elastic search",),
    "OpenSearch": (),
    "DuckDB": (),
    "Chroma": ("chromadb",),
    "FTS5": (),
    "SQLAlchemy": (),
    "Alembic": (),
    "Prisma": (),
    "TypeScript": (),
    "JavaScript": (),
    "Node.js": ("nodejs", "node js"),
    "Deno": (),
    "Bun": (),
    "npm": ("npx",),
    "pnpm": (),
    "Yarn": (),
    "Next.js": ("nextjs", "next js"),
    "Vue": ("vue.js", "vuejs"),
    "Svelte": ("sveltekit",),
    "Angular": (),
    "Vite": (),
    "webpack": (),
    "Babel": (),
    "Tailwind CSS": ("tailwind", "tailwindcss"),
    "ESLint": (),
    "Jest": (),
    "Vitest": (),
    "Playwright": (),
    "Cypress": (),
    "Lucide": ("lucide-react",),
    "GraphQL": (),
    "gRPC": (),
    "REST API": ("rest api", "restful"),
    "WebSocket": ("websockets",),
    "OAuth": ("oauth2",),
    "JWT": (),
    "FastAPI": (),
    "Django": (),
    "Starlette": (),
    "Uvicorn": (),
    "Gunicorn": (),
    "Celery": (),
    "pydantic": (),
    "pydantic-ai": ("pydantic ai", "pydantic_ai"),
    "asyncio": (),
    "aiosqlite": (),
    "httpx": ("httpx2",),
    "pytest": (),
    "pytest-xdist": ("xdist",),
    "mypy": (),
    "Ruff": (),
    "pip": (),
    "uv": (),
    "Poetry": (),
    "Conda": ("anaconda", "miniconda"),
    "Jupyter": ("jupyterlab", "ipython"),
    "NumPy": (),
    "pandas": (),
    "PyTorch": ("torch",),
    "TensorFlow": (),
    "ONNX": ("onnxruntime",),
    "Hugging Face": ("huggingface",),
    "LangChain": (),
    "LlamaIndex": (),
    "tiktoken": (),
    "OpenAI": (),
    "Anthropic": (),
    "Claude": (),
    "Claude Code": (),
    "MCP": ("model context protocol",),
    "Ollama": (),
    "Docker": ("docker-compose", "docker compose"),
    "Kubernetes": ("k8s", "kubectl"),
    "Helm": (),
    "Terraform": (),
    "Ansible": (),
    "nginx": (),
    "AWS": ("amazon web services",),
    "S3": (),
    "GCP": ("google cloud",),
    "Azure": (),
    "Vercel": (),
    "Netlify": (),
    "Heroku": (),
    "Supabase": (),
    "Firebase": (),
    "Kafka": (),
    "RabbitMQ": (),
    "Git": (),
    "GitHub": (),
    "GitHub Actions": (),
    "GitLab": (),
    "Bash": ("shell script",),
    "zsh": (),
    "Linux": (),
    "macOS": ("osx",),
    "Ruby on Rails": (),
    "Ruby": (),
    "PHP": (),
    "Java": (),
    "Kotlin": (),
    "Golang": (),
    "C++": ("cpp",),
    "WAL": ("write-ahead log", "write ahead log"),
    "YAML": (),
    "TOML": (),
    "HTML": (),
    "CSS": (),
}

# Also English words: they match only with this exact capitalisation.
_CASE_SENSITIVE: dict[str, str] = {
    "React": "React",
    "Flask": "Flask",
    "Rust": "Rust",
    "Swift": "Swift",
    "Express": "Express",
    "Spark": "Spark",
    "Prettier": "Prettier",
}

# Not inside a path or a longer word before; not a file name after ("CLAUDE.md", "pytest.ini").
_EDGE_BEFORE = r"(?<![\w./@-])"
_EDGE_AFTER = r"(?![\w+-])(?!\.[a-z0-9]{1,5}\b)"


def canonical_names() -> list[str]:
    """Every canonical technology name the gazetteer knows."""
    return sorted({*_TECHNOLOGIES, *_CASE_SENSITIVE.values()})


@cache
def _spellings() -> dict[str, str]:
    """Lower-cased spelling -> canonical name, for the case-insensitive entries."""
    table: dict[str, str] = {}
    for canonical, aliases in _TECHNOLOGIES.items():
        for spelling in (canonical, *aliases):
            table[spelling.lower()] = canonical
    return table


@cache
def _pattern() -> re.Pattern[str]:
    spellings = sorted(_spellings(), key=lambda s: (-len(s), s))
    alternatives = "|".join(re.escape(s) for s in spellings)
    return re.compile(_EDGE_BEFORE + "(" + alternatives + ")" + _EDGE_AFTER, re.IGNORECASE)


@cache
def _case_pattern() -> re.Pattern[str]:
    alternatives = "|".join(re.escape(s) for s in sorted(_CASE_SENSITIVE, key=lambda s: (-len(s), s)))
    return re.compile(_EDGE_BEFORE + "(" + alternatives + ")" + _EDGE_AFTER)


def canonical(name: str) -> str | None:
    """The canonical technology for one spelling (`sqlite3` -> `SQLite`), or None if unknown."""
    return _spellings().get(name.strip().lower()) or _CASE_SENSITIVE.get(name.strip())


def find_technologies(text: str) -> list[str]:
    """Canonical names of the technologies `text` mentions, in order of first mention."""
    found: dict[str, int] = {}
    for match in _pattern().finditer(text):
        name = _spellings()[match.group(1).lower()]
        found.setdefault(name, match.start())
    for match in _case_pattern().finditer(text):
        found.setdefault(_CASE_SENSITIVE[match.group(1)], match.start())
    return [name for name, _ in sorted(found.items(), key=lambda item: (item[1], item[0]))]


@cache
def spellings(name: str) -> tuple[str, ...]:
    """Every spelling the gazetteer knows for the technology `name` ("PostgreSQL": postgres, psql, …)."""
    target = canonical(name) or name
    found = {target, *(s for s, c in _spellings().items() if c == target)}
    found |= {s for s, c in _CASE_SENSITIVE.items() if c == target}
    return tuple(sorted(found))
