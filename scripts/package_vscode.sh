#!/usr/bin/env bash
# Builds the VS Code extension into client-config/vscode/out/fusion-switch-<version>.vsix and
# checks what went into it.
#
#   scripts/package_vscode.sh            npm ci, bundle, copy the schema, vsce package, check
#   SKIP_NPM_CI=1 scripts/package_vscode.sh   reuse node_modules (faster when developing)
#   scripts/package_vscode.sh --target linux-x64|linux-arm64
#        a platform-specific .vsix (fusion-switch-<target>-<version>.vsix) that carries the server
#        and its libraries for each supported CPython (from scripts/build_wheelhouse.sh, run first;
#        OFFLINE_DIR overrides where its output is) and starts it with any host Python.
#
# Needs node >= 20 and npm (the lock file pins @vscode/vsce 3.x, which runs on node 20).
# The generated schema comes from schemas/fusion_switch.schema.json (scripts/generate_schema.py).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ext="$root/client-config/vscode"
schema_src="$root/schemas/fusion_switch.schema.json"
cd "$ext"

target=""
if [[ "${1:-}" == --target ]]; then
  target="${2:?--target needs linux-x64 or linux-arm64}"
fi
offline="${OFFLINE_DIR:-${FUSION_SWITCH_CACHE:-$HOME/.cache/fusion-switch}/offline}"

fail() {
  echo "package_vscode: $*" >&2
  exit 1
}

command -v npm >/dev/null || fail "npm not found; install Node.js 20+ (apt-get install nodejs npm)"
[[ -f "$schema_src" ]] || fail "$schema_src is missing; run: python scripts/generate_schema.py"

if [[ "${SKIP_NPM_CI:-}" != 1 || ! -d node_modules ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

rm -rf dist out schemas bundled/libs
npm run --silent build
mkdir -p schemas out
cp "$schema_src" schemas/fusion_switch.schema.json

version="$(node -p "require('./package.json').version")"
vsix="out/fusion-switch-$version.vsix"
# --no-dependencies: everything is bundled into dist/extension.js by esbuild.
npx --no-install vsce package --no-dependencies --skip-license --allow-missing-repository \
  --out "$vsix"
if [[ -n "$target" ]]; then
  # The platform .vsix is the universal one plus bundled/ (launcher + libraries), marked with
  # TargetPlatform. Added with zipfile rather than by vsce, whose secret scan takes >10 min over
  # the ~15k library files.
  libs="$offline/bundle/$target/libs"
  [[ -d "$libs" ]] || fail "$libs is missing; run scripts/build_wheelhouse.sh first"
  universal="$vsix"
  vsix="out/fusion-switch-$target-$version.vsix"
  python3 - "$universal" "$vsix" "$target" "$ext/bundled/launch.py" "$libs" <<'PY'
import os, re, sys, zipfile
universal, vsix, target, launcher, libs = sys.argv[1:]
with zipfile.ZipFile(universal) as src, zipfile.ZipFile(vsix, "w", zipfile.ZIP_DEFLATED) as out:
    for item in src.infolist():
        data = src.read(item)
        if item.filename == "extension.vsixmanifest":
            text = data.decode("utf-8")
            text = re.sub(r'(<Identity [^>]*?)(\s*/>)', rf'\1 TargetPlatform="{target}"\2', text, 1)
            data = text.encode("utf-8")
        out.writestr(item, data)
    out.write(launcher, "extension/bundled/launch.py")
    for folder, dirs, files in os.walk(libs):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "tests")]
        for name in files:
            path = os.path.join(folder, name)
            out.write(path, "extension/bundled/libs/" + os.path.relpath(path, libs))
PY
fi
# --- check the contents --------------------------------------------------------------------
listing="$(node test/vsix.mjs "$vsix")"

echo "$vsix: $(stat -c %s "$vsix") bytes, $(wc -l <<<"$listing") entries"
if [[ -n "$target" ]]; then
  for abi in $(ls "$libs"); do
    grep -qP "\textension/bundled/libs/$abi/fusion_switch/__init__.py$" <<<"$listing" ||
      fail "$vsix lacks the server for $abi"
  done
  grep -qP "\textension/bundled/launch.py$" <<<"$listing" || fail "$vsix lacks bundled/launch.py"
  echo "$listing" | grep -vP "\textension/bundled/libs/" | sed 's/^/  /'
  echo "  ... and the bundled libraries for: $(ls "$libs" | tr '\n' ' ')"
else
  echo "$listing" | sed 's/^/  /'
  if grep -qP "\textension/bundled/libs/" <<<"$listing"; then
    fail "$vsix (universal) must not carry bundled libraries"
  fi
fi

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
