#!/usr/bin/env bash
# Installs code-server (VS Code in the browser) and Playwright's Python package for the real-VS-Code suite
# (tests/clients/vscode/), from package registries only: no GitHub, no Playwright browser download.
#
#   scripts/install_code_server.sh      prints the code-server executable path on its last line
#
# The install lives OUTSIDE the clone, in ${FUSION_SWITCH_CACHE:-$HOME/.cache/fusion-switch}/code-server-<version>,
# so reruns take a second; on a machine without that folder it does the full (cold) install.
#   - code-server 4.100.x needs Node.js 20 exactly; when the system's node is another major version, the npm
#     package node-linux-<arch>@20 provides one (kept in the same cache folder).
#   - its postinstall builds native modules (needs a C++ toolchain, python3 and libkrb5-dev).
#   - @vscode/ripgrep's postinstall downloads rg from GitHub; we fill its download cache with Debian's rg first.
#   - the browser is Debian's /usr/bin/chromium (apt package chromium), launched by path by the tests.
set -euo pipefail

CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.100.3}"
cache="${FUSION_SWITCH_CACHE:-$HOME/.cache/fusion-switch}"
prefix="$cache/code-server-$CODE_SERVER_VERSION"
bin="$prefix/node_modules/.bin/code-server"

log() { echo "install_code_server: $*" >&2; }
fail() {
  log "$*"
  exit 1
}

# --- Debian packages ---------------------------------------------------------------------------------------
apt_packages=(chromium ripgrep libkrb5-dev build-essential python3)
missing=()
for p in "${apt_packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  log "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ -x "$bin" ] && [ -f "$prefix/.complete" ]; then
  echo "$bin"
  exit 0
fi

start=$(date +%s)
rm -rf "$prefix"
mkdir -p "$prefix"
cd "$prefix"
echo '{"name":"fusion-switch-code-server","private":true}' >package.json

# --- Node.js 20 ----------------------------------------------------------------------------------------------
case "$(uname -m)" in
  x86_64) node_arch=x64 rg_target=x86_64-unknown-linux-musl ;;
  aarch64) node_arch=arm64 rg_target=aarch64-unknown-linux-musl ;;
  *) fail "unsupported machine $(uname -m)" ;;
esac
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo none)"
if [ "$node_major" != 20 ]; then
  log "system node is $node_major; installing node-linux-$node_arch@20 from npm"
  npm install --no-audit --no-fund --loglevel=error --prefix "$prefix/node20" "node-linux-$node_arch@20"
  node20_bin="$(dirname "$(find "$prefix/node20/node_modules/node-linux-$node_arch" -path '*/bin/node' | head -1)")"
  export PATH="$node20_bin:$PATH"
  echo "$node20_bin" >"$prefix/node-bin-dir"
fi

# node-gyp builds against the running node's headers (no download from nodejs.org), and the
# native modules' scripts call `npx node-gyp` which must not stop to ask.
node_prefix="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
[ -f "$node_prefix/include/node/node.h" ] || fail "no Node.js headers in $node_prefix/include/node"
export npm_config_nodedir="$node_prefix" npm_config_yes=true

# --- ripgrep download cache ----------------------------------------------------------------------------------
# @vscode/ripgrep looks for $TMPDIR/vscode-ripgrep-cache-<its version>/ripgrep-<rg tag>-<target>.tar.gz before
# asking GitHub. Resolve the version VS Code's range picks and pre-fill that cache with Debian's rg.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "code-server@$CODE_SERVER_VERSION" >/dev/null &&
  tar xzf code-server-*.tgz package/lib/vscode/package.json package/lib/vscode/npm-shrinkwrap.json &&
  mv package cs)
# the shrinkwrap pins the version npm will install; the range is the fallback
rg_range="$(node -p "
  const w = require('$tmp/cs/lib/vscode/npm-shrinkwrap.json').packages || {};
  (w['node_modules/@vscode/ripgrep'] || {}).version ||
    require('$tmp/cs/lib/vscode/package.json').dependencies['@vscode/ripgrep']")"
(cd "$tmp" && npm pack --silent "@vscode/ripgrep@$rg_range" >/dev/null && tar xzf vscode-ripgrep-*.tgz)
rg_pkg_version="$(node -p "require('$tmp/package/package.json').version")"
if [ -f "$tmp/package/lib/postinstall.js" ]; then
  rg_tag="$(sed -n "s/^const VERSION = '\(.*\)';/\1/p" "$tmp/package/lib/postinstall.js")"
  [ -n "$rg_tag" ] || fail "cannot read the ripgrep tag from @vscode/ripgrep@$rg_pkg_version"
  rg_cache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-$rg_pkg_version"
  mkdir -p "$rg_cache" "$tmp/rg"
  cp "$(command -v rg)" "$tmp/rg/rg"
  tar czf "$rg_cache/ripgrep-$rg_tag-$rg_target.tar.gz" -C "$tmp/rg" rg
  log "ripgrep cache filled: $rg_cache (Debian rg for @vscode/ripgrep $rg_pkg_version, $rg_tag)"
else
  # 1.18+ ships rg in per-platform npm packages (optionalDependencies): nothing to download.
  log "@vscode/ripgrep $rg_pkg_version takes rg from npm; no download cache needed"
fi

# --- code-server -------------------------------------------------------------------------------------------
log "npm install code-server@$CODE_SERVER_VERSION (builds native modules; a few minutes)"
npm install --no-audit --no-fund --loglevel=error --unsafe-perm "code-server@$CODE_SERVER_VERSION" >&2
[ -x "$bin" ] || fail "code-server was not installed at $bin"
rgs="$(find "$prefix/node_modules/code-server/lib/vscode/node_modules/@vscode/" -path '*ripgrep*/bin/rg' 2>/dev/null | head -1)"
[ -n "$rgs" ] || fail "VS Code's ripgrep is missing (the download cache was not used)"
touch "$prefix/.complete"
log "installed in $(($(date +%s) - start)) s"
echo "$bin"
