#!/usr/bin/env bash
# Create .venv and install fusion-switch into it (editable). Idempotent; works on a fresh machine
# with Python >= 3.11. Usage: bash scripts/setup.sh [--test]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
if [ "${1:-}" = "--test" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
  # msaccucmp (inside mindstudio-probe) is the test oracle for the comparison engine. Its declared
  # dependencies pull in torch and more that msaccucmp does not need; numpy + psutil suffice.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps 'mindstudio-probe==26.2.0'
else
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
fi
if ! .venv/bin/python -c "import fusion_switch.compare._kernel" 2>/dev/null; then
  echo "note: the compiled metrics kernel was not built (it needs a C compiler and Python's headers," >&2
  echo "      e.g. apt install gcc python3-dev, then rerun this script); comparisons use numpy:" >&2
  echo "      the same results, about twice as slow per tensor pair." >&2
fi
