#!/usr/bin/env bash
# Set up everything the tests need on a fresh Debian machine and run the whole suite.
# Installs: Debian packages for the real-editor and report-rendering tests (needs root or sudo) and the Python venv with
# test extras; the VS Code extension's npm packages are installed by its packaging test
# (scripts/package_vscode.sh). Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(neovim emacs-nox elpa-eglot chromium gcc libc6-dev clang)  # gcc: the C extensions; clang: the kernel built by clang too
missing=()
for p in "${apt_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

bash scripts/setup.sh --test

# Real VS Code (tests/clients/vscode): code-server from npm, cached outside the clone (cold: ~6 min).
CODE_SERVER_BIN="$(bash scripts/install_code_server.sh | tail -1)"
export CODE_SERVER_BIN

.venv/bin/ruff check .
.venv/bin/ruff format --check .
# Spread over the cores (at most 4: a comparison test starts processes of its own); the files
# that share a build folder or the cache go to one worker (tests/conftest.py), and the tests
# that observe the whole machine (marker machine_wide) run after the others, alone. On two
# cores the suite took 17 minutes instead of 28. `-n 0` as an argument runs it in one process.
cores=$(nproc 2>/dev/null || echo 1)
workers=$(( cores < 4 ? cores : 4 ))
if [ "$workers" -lt 2 ]; then
  exec .venv/bin/python -m pytest -q "$@"
fi
for argument in "$@"; do  # a marker expression of the caller's own: one run, theirs
  case "$argument" in -m*) exec .venv/bin/python -m pytest -q -n "$workers" --dist loadfile "$@" ;; esac
done
status=0
.venv/bin/python -m pytest -q -n "$workers" --dist loadfile -m "not machine_wide" "$@" || status=$?
alone=0
.venv/bin/python -m pytest -q -m machine_wide "$@" || alone=$?
# 5: no test selected (arguments that name other tests)
if [ "$status" -eq 5 ] && [ "$alone" -eq 0 ]; then status=0; fi
if [ "$status" -eq 0 ] && [ "$alone" -ne 5 ]; then status=$alone; fi
exit "$status"
