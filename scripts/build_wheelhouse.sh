#!/usr/bin/env bash
# Offline installs: a wheelhouse (our wheel + every dependency, for linux-x64 and linux-arm64 and
# each supported CPython) and, per platform, the library folders a platform-specific .vsix bundles.
#
#   scripts/build_wheelhouse.sh [OUT]    default OUT: ${FUSION_SWITCH_CACHE:-~/.cache/fusion-switch}/offline
#
# Produces
#   OUT/wheelhouse/*.whl                         pip install --no-index --find-links OUT/wheelhouse fusion-switch
#   OUT/bundle/<platform>/libs/cp3XY/...         what scripts/package_vscode.sh --target <platform> ships
# Wheels come from PyPI with `pip download --only-binary=:all: --platform ... --python-version ...`
# (no compiler, no internet needed on the target host). Heavy (about 200 MB); not in the default CI path.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-${FUSION_SWITCH_CACHE:-$HOME/.cache/fusion-switch}/offline}"
python="${PYTHON:-$root/.venv/bin/python}"
PYTHONS=(${FUSION_SWITCH_PYTHONS:-3.11 3.12 3.13})
declare -A PLATFORM_TAGS=(
  [linux-x64]="manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64"
  [linux-arm64]="manylinux_2_28_aarch64 manylinux_2_27_aarch64 manylinux_2_17_aarch64 manylinux2014_aarch64"
)
PLATFORMS=(${FUSION_SWITCH_PLATFORMS:-linux-x64 linux-arm64})

wheelhouse="$out/wheelhouse"
mkdir -p "$wheelhouse"
rm -f "$wheelhouse"/fusion_switch-*.whl
# pure Python (the C parts are optional speed-ups): one wheel installs on every platform
FUSION_SWITCH_PURE_PYTHON=1 "$python" -m pip wheel --quiet --no-deps --wheel-dir "$wheelhouse" "$root"
ours="$(ls "$wheelhouse"/fusion_switch-*.whl)"
echo "build_wheelhouse: $(basename "$ours")"

for platform in "${PLATFORMS[@]}"; do
  tags=()
  for tag in ${PLATFORM_TAGS[$platform]}; do tags+=(--platform "$tag"); done
  for version in "${PYTHONS[@]}"; do
    abi="cp${version/./}"
    "$python" -m pip download --quiet --only-binary=:all: "${tags[@]}" --python-version "$version" \
      --implementation cp --abi "$abi" --abi abi3 --abi none --dest "$wheelhouse" "$ours"
    libs="$out/bundle/$platform/libs/$abi"
    rm -rf "$libs"
    "$python" -m pip install --quiet --no-warn-conflicts --no-index --find-links "$wheelhouse" --only-binary=:all: \
      "${tags[@]}" --python-version "$version" --implementation cp --abi "$abi" --abi abi3 \
      --abi none --no-compile --target "$libs" "$ours"
    rm -rf "$libs"/bin
    echo "build_wheelhouse: $platform $abi -> $libs ($(du -sh "$libs" | cut -f1))"
  done
done
echo "build_wheelhouse: $(ls "$wheelhouse" | wc -l) wheels in $wheelhouse ($(du -sh "$wheelhouse" | cut -f1))"
