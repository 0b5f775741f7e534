#!/usr/bin/env bash
# Admission under attack (issue 28, item 1), on the local cluster (`make up`):
#   A. three unauthenticated ~44 KB AdmissionReviews posted straight to the
#      webhook's HTTPS port (a 3,000-replica task whose container repeats
#      PADDLE_PORT 1,000 times), while a small Paddle job is created;
#   B. two schema-valid `kubectl create` of ~100 KB jobs (3,000 replicas,
#      2,500 env entries),
#      while a small Paddle job is created.
# It prints how long each big request took and what it was answered, and how
# long the small job's creation took. Only loopback is used.
set -euo pipefail
cd "$(dirname "$0")/.."
KUBECTL=${KUBECTL:-bin/kubectl}
KCFG=.local/kubeconfig
NS=attack
work=$(mktemp -d)
trap 'rm -rf "$work"; $KUBECTL --kubeconfig $KCFG delete namespace $NS --wait=false >/dev/null 2>&1 || true' EXIT

pid=$(python3 -c 'import json;print(json.load(open(".local/cluster.json"))["components"]["vc-webhook-manager-paddle"])')
port=$(ss -ltnpH | awk -v p="pid=$pid," 'index($0,p){split($4,a,":");print a[length(a)];exit}')
[ -n "$port" ] || { echo "webhook manager (pid $pid) listens on no port: is the cluster up (make up)?" >&2; exit 1; }

python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
def job(name, replicas, repeats, distinct=0):
    env = [{"name": "PADDLE_PORT", "value": "36000"}] * repeats
    env += [{"name": "V%d" % i, "value": "x"} for i in range(distinct)]
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "attack"},
            "spec": {"schedulerName": "volcano", "minAvailable": 1, "plugins": {"paddle": []},
                     "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {
                         "restartPolicy": "Never",
                         "containers": [{"name": "main", "image": "busybox", "env": env}]}}}]}}
review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
    "uid": "attack", "operation": "CREATE", "namespace": "attack",
    "kind": {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"},
    "resource": {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"},
    "object": job("attack", 3000, 1000)}}
json.dump(review, open(work + "/review.json", "w"))
for i in (1, 2):
    # Schema-valid: the CRD refuses repeated env names (a list map), so
    # the variable is given once and the size comes from other names.
    json.dump(job("big-%d" % i, 3000, 1, 2500), open(work + "/big-%d.json" % i, "w"))
small = job("small", 2, 0)
small["spec"]["minAvailable"] = 2
json.dump(small, open(work + "/small.json", "w"))
EOF
$KUBECTL --kubeconfig $KCFG create namespace $NS >/dev/null

now() { date +%s.%N; }
small() {
  local t0 t1
  t0=$(now)
  $KUBECTL --kubeconfig $KCFG create -f "$work/small.json" >/dev/null
  t1=$(now)
  echo "small Paddle job admitted in $(python3 -c "print(f'{$t1-$t0:.2f}')") s"
  $KUBECTL --kubeconfig $KCFG delete -f "$work/small.json" --wait=true >/dev/null
}

echo "A. three ~$(( $(stat -c %s "$work/review.json") / 1024 )) KB AdmissionReviews posted to https://127.0.0.1:$port/jobs/paddle/validate"
for i in 1 2 3; do
  ( t0=$(now); out=$(curl -sk --max-time 60 -H 'Content-Type: application/json' --data-binary @"$work/review.json" \
      "https://127.0.0.1:$port/jobs/paddle/validate" || true); t1=$(now)
    echo "  post $i answered in $(python3 -c "print(f'{$t1-$t0:.2f}')") s: $(echo "$out" | python3 -c 'import json,sys
try:
  r=json.load(sys.stdin)["response"]; print("allowed" if r["allowed"] else r["status"]["message"][:160])
except Exception as e: print("no review:", e)')" ) &
done
small
wait

echo "B. two kubectl create of ~$(( $(stat -c %s "$work/big-1.json") / 1024 )) KB jobs"
for i in 1 2; do
  ( t0=$(now); out=$($KUBECTL --kubeconfig $KCFG create -f "$work/big-$i.json" 2>&1 || true); t1=$(now)
    echo "  create $i answered in $(python3 -c "print(f'{$t1-$t0:.2f}')") s: ${out:0:160}" ) &
done
small
wait
