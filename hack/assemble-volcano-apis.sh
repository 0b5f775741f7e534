#!/usr/bin/env bash
# assemble-volcano-apis.sh [check]
#
# Builds the volcano.sh/apis module the Volcano v1.15.1 build compiles with
# (go.volcano-v1.15.1.mod: replace volcano.sh/apis => ./.local/volcano-apis).
# Volcano v1.15.1 builds against an in-tree API module that the Go module
# proxy does not serve; the proxy's newest is v1.14.0, which has the same Go
# types and lacks one constant. So: download volcano.sh/apis v1.14.0 with the
# go command (verified against go.sum's checksum database), copy it out of the
# module cache, add hack/volcano-apis/queue_allocation_gate.go.in. Nothing else
# is added and nothing comes from anywhere but the module proxy.
#
# With "check" it only proves that the assembled folder is exactly the proxy's
# v1.14.0 plus our file: the folder minus our file hashes (golang.org/x/mod
# dirhash "h1") to the sum the go command verified for v1.14.0.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=volcano.sh/apis
ver=v1.14.0
out=.local/volcano-apis
ours=pkg/apis/scheduling/v1beta1/zz_volcano_paddle_queue_allocation_gate.go
src=hack/volcano-apis/queue_allocation_gate.go.in

# The "h1:" hash of a module folder as the go command computes it
# (golang.org/x/mod/sumdb/dirhash.Hash1): sha256 over the sorted lines
# "<sha256 of file>  <module>@<version>/<path>", base64-encoded.
dirhash() {
  local dir=$1 skip=$2
  (cd "$dir" && find . -type f | sed 's|^\./||' | grep -vxF "$skip" | LC_ALL=C sort |
    while IFS= read -r f; do
      printf '%s  %s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" "$mod@$ver/$f"
    done) | sha256sum | cut -d' ' -f1 | xxd -r -p | base64
}

info=$(go mod download -json "$mod@$ver")
dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$info")
sum=$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p' <<<"$info")
if [[ -z $dir || -z $sum ]]; then
  echo "go mod download $mod@$ver gave no folder or sum:" >&2
  echo "$info" >&2
  exit 1
fi

check() {
  local got
  got="h1:$(dirhash "$out" "$ours")"
  if [[ $got != "$sum" ]]; then
    echo "$out minus $ours hashes to $got, the proxy's $mod@$ver is $sum: rerun hack/assemble-volcano-apis.sh" >&2
    return 1
  fi
  if ! cmp -s "$src" "$out/$ours"; then
    echo "$out/$ours differs from $src: rerun hack/assemble-volcano-apis.sh" >&2
    return 1
  fi
  echo "   $out is $mod@$ver ($sum) plus $src"
}

if [[ ${1:-} == check ]]; then
  check
  exit
fi

# Rebuild from scratch only when what is there is not what we want.
if [[ -d $out ]] && check >/dev/null 2>&1; then
  exit 0
fi
rm -rf "$out"
mkdir -p "$(dirname "$out")"
cp -r "$dir" "$out"
chmod -R u+w "$out"
cp "$src" "$out/$ours"
check
