#!/usr/bin/env bash
# Differential check of the paddle scheduler plugin against an earlier
# commit: builds that commit's plugin beside today's, opens the same
# sessions for both (random clusters of GPU nodes, running fillers,
# elastic and checkpointable jobs, waiting gangs of every age, two queues;
# four sessions each, the clock moving on, what one session placed
# running in the next) under several argument sets (deploy/paddle's, the
# defaults and four others), and compares every callback's answer: job
# and task order, job validity and fit errors, JobStarving, every
# predicate, node scores, preemptable and reclaimable victims (and, in the
# v1.15.1 build, the gang-aware eviction hook), and the reservation book,
# at open and again after Volcano's allocate action.
#
#	hack/scheddiff/run.sh [BASE]   # BASE defaults to da6bc63, before issue 36
#	GOFLAGS="-modfile=$PWD/go.volcano-v1.15.1.mod -tags=volcano_v1_15" hack/scheddiff/run.sh
#
# The argument sets use only arguments both commits have. Gangs of one
# scenario never wait exactly as long as each other: among equally old
# starving gangs both commits pick a queue's blocker in Go's map order.
set -euo pipefail
base=${1:-da6bc63}
cd "$(dirname "$0")/../.."
pkg=pkg/scheduler/plugins/paddle
old=$pkg/internal/oldpaddle
here=hack/scheddiff
trap 'rm -rf "$pkg/internal" "$pkg/diff_test.go" "$pkg/diff_v115_test.go"' EXIT
mkdir -p "$old"
for f in $(git ls-tree --name-only "$base" "$pkg/" | grep '\.go$' | grep -v '_test\.go$'); do
	git show "$base:$f" > "$old/$(basename "$f")"
done
# The copy must not register itself: the check opens its sessions by hand.
sed -i 's/^func init() {$/func unusedInit() {/' "$old"/*.go
cp "$here/shim.go.in" "$old/shim.go"
cp "$here/shim_v115.go.in" "$old/shim_v115.go"
cp "$here/diff_test.go.in" "$pkg/diff_test.go"
cp "$here/diff_v115_test.go.in" "$pkg/diff_v115_test.go"
go test -count=1 -timeout 30m -run TestDifferentialAgainstBaseline -v "./$pkg/" 2>&1 | grep -v '^[IWE][0-9][0-9][0-9][0-9] '
