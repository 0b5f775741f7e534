#!/usr/bin/env bash
# build.sh LABEL MODULE_DIR OUTPUT PACKAGE [go build flags...]
# Builds one Go command and prints a line every 30 s while it runs: cold
# builds of kube-apiserver take minutes on 2 cores, and silence looks hung.
set -euo pipefail
label=$1 dir=$2 out=$3 pkg=$4
shift 4
start=$(date +%s)
echo ">> building ${label}"
(
  cd "$dir"
  exec go build "$@" -o "$out" "$pkg"
) &
pid=$!
trap 'kill $pid 2>/dev/null || true' INT TERM
while kill -0 "$pid" 2>/dev/null; do
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "   ... still building ${label} ($(( $(date +%s) - start ))s)"
  fi
done
wait "$pid"
echo "   built ${label} in $(( $(date +%s) - start ))s"
