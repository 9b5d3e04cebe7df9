# Sourced by scripts/start and scripts/test: makes sure .venv exists with a Python >= 3.11 and
# installs cairn into it (editable, with the extras given as $1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "cairn needs Python 3.11 or newer; set PYTHON=/path/to/python3.11 and run again." >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# pip is quiet, and a first install downloads chromadb, onnxruntime and more: say what the wait is.
echo "Installing cairn into .venv; a first install downloads its dependencies (minutes)…" >&2
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${1:-}"
