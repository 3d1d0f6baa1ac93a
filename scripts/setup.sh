#!/usr/bin/env bash
# Installs, with apt-get and by package name, whatever this project needs and
# the machine lacks. Idempotent; prints nothing when everything is there.
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ python3
  clang-22 llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libclang-rt-22-dev
  libgtest-dev libgmock-dev libbenchmark-dev libxxhash-dev
  nlohmann-json3-dev libomp-22-dev python3-numpy python3-torch
  python3-dev
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
