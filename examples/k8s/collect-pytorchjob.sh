#!/usr/bin/env bash
# Gather what Kubernetes knows about a failed PyTorchJob, then let crashlens name the cause.
#
#   examples/k8s/collect-pytorchjob.sh JOB [-n NAMESPACE] [-o DIR] [-- ANALYZE-FLAGS...]
#
# Writes into DIR (default: ./crashlens-JOB):
#   pytorchjob.json          kubectl get pytorchjob JOB -o json (which replica failed first)
#   pods.json                kubectl get pods -l <the job's label> -o json (exit codes, OOMKilled,
#                            Evicted and its message, restarts, node names, limits)
#   pods/POD.describe.txt    kubectl describe pod (the same facts, and the pod's events)
#   pods/POD.CONTAINER.log   the container's log; POD.CONTAINER.previous.log: the log of the
#                            container that died before a restart (kubectl logs --previous)
#   events.json              kubectl get events -o json of the namespace (OOMKilling from
#                            node-problem-detector, Evicted, BackOff, FailedScheduling)
# then runs `crashlens analyze DIR` with ANALYZE-FLAGS (e.g. -f markdown -o report.md).
#
# Needs read access to pods, pods/log, events and pytorchjobs in the namespace. Set KUBECTL
# to use another client (e.g. "oc"), SELECTOR to pick the pods another way (the training
# operator labels them training.kubeflow.org/job-name=JOB; older operators used
# pytorch-job-name=JOB), CRASHLENS to the crashlens command. A kubectl call that fails is
# reported and skipped: what could be gathered is still analyzed.
set -uo pipefail

usage() { sed -n '4p' "$0" | sed 's/^# *//' >&2; exit 2; }
[[ $# -ge 1 && "$1" != -* ]] || usage
job="$1"; shift
namespace="default"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n|--namespace) namespace="${2:?}"; shift 2 ;;
    -o|--out) out="${2:?}"; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
out="${out:-crashlens-$job}"
kubectl_cmd="${KUBECTL:-kubectl}"
crashlens_cmd="${CRASHLENS:-crashlens}"
selector="${SELECTOR:-training.kubeflow.org/job-name=$job}"

k() { "$kubectl_cmd" -n "$namespace" "$@"; }

# save FILE COMMAND...: the command's output into FILE; on failure, say so and keep nothing.
save() {
  local file="$1"; shift
  if ! "$@" > "$file" 2> "$file.err"; then
    echo "collect-pytorchjob: skipped $(basename "$file"): $(head -c 300 "$file.err")" >&2
    rm -f "$file"
  fi
  rm -f "$file.err"
  [[ -s "$file" ]] || rm -f "$file"
}

mkdir -p "$out/pods" || exit 2
save "$out/pytorchjob.json" k get pytorchjob "$job" -o json
save "$out/pods.json" k get pods -l "$selector" -o json
save "$out/events.json" k get events -o json

pods="$(k get pods -l "$selector" -o name 2>/dev/null | sed 's|^pod/||')"
[[ -n "$pods" ]] || echo "collect-pytorchjob: no pod matches -l $selector in $namespace" >&2
for pod in $pods; do
  save "$out/pods/$pod.describe.txt" k describe pod "$pod"
  containers="$(k get pod "$pod" -o jsonpath='{.spec.containers[*].name}' 2>/dev/null)"
  for container in $containers; do
    save "$out/pods/$pod.$container.log" k logs "$pod" -c "$container"
    # Only a restarted container has a previous one; kubectl refuses otherwise (not an error).
    "$kubectl_cmd" -n "$namespace" logs "$pod" -c "$container" --previous \
      > "$out/pods/$pod.$container.previous.log" 2>/dev/null || true
    [[ -s "$out/pods/$pod.$container.previous.log" ]] || rm -f "$out/pods/$pod.$container.previous.log"
  done
done

echo "collect-pytorchjob: gathered $(find "$out" -type f | wc -l) files into $out" >&2
exec "$crashlens_cmd" analyze "$out" "$@"
