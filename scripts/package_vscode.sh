#!/usr/bin/env bash
# Builds the VS Code extension into client-config/vscode/out/fusion-switch-<version>.vsix and
# checks what went into it.
#
#   scripts/package_vscode.sh            npm ci, bundle, copy the schema, vsce package, check
#   SKIP_NPM_CI=1 scripts/package_vscode.sh   reuse node_modules (faster when developing)
#
# Needs node >= 20 and npm (the lock file pins @vscode/vsce 3.x, which runs on node 20).
# The generated schema comes from schemas/fusion_switch.schema.json (scripts/generate_schema.py).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ext="$root/client-config/vscode"
schema_src="$root/schemas/fusion_switch.schema.json"
cd "$ext"

fail() {
  echo "package_vscode: $*" >&2
  exit 1
}

command -v npm >/dev/null || fail "npm not found; install Node.js 20+ (apt-get install nodejs npm)"
[[ -f "$schema_src" ]] || fail "$schema_src is missing; run: python scripts/generate_schema.py"

if [[ "${SKIP_NPM_CI:-}" != 1 || ! -d node_modules ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

rm -rf dist out schemas
npm run --silent build
mkdir -p schemas out
cp "$schema_src" schemas/fusion_switch.schema.json

version="$(node -p "require('./package.json').version")"
vsix="out/fusion-switch-$version.vsix"
# --no-dependencies: everything is bundled into dist/extension.js by esbuild.
npx --no-install vsce package --no-dependencies --skip-license --allow-missing-repository \
  --out "$vsix"

# --- check the contents --------------------------------------------------------------------
listing="$(node test/vsix.mjs "$vsix")"

echo "$vsix: $(stat -c %s "$vsix") bytes, $(wc -l <<<"$listing") entries"
echo "$listing" | sed 's/^/  /'

for required in extension/package.json extension/dist/extension.js \
  extension/schemas/fusion_switch.schema.json extension/language-configuration.json \
  extension/syntaxes/fusion-switch.tmLanguage.json extension/readme.md; do
  grep -qP "\t\Q$required\E$" <<<"$listing" || fail "$vsix lacks $required"
done
if grep -qP "\textension/(node_modules|src|test)/" <<<"$listing"; then
  fail "$vsix bundles node_modules, src or test; check .vscodeignore"
fi
cmp -s "$schema_src" <(node test/vsix.mjs "$vsix" extension/schemas/fusion_switch.schema.json) ||
  fail "the packaged schema differs from $schema_src"
echo "package_vscode: OK $vsix"
