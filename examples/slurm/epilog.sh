#!/usr/bin/env bash
# Slurm Epilog for crashlens: when a job failed, gather its evidence on this node.
#
# Install it as (or call it from) the node Epilog in slurm.conf:  Epilog=/etc/slurm/epilog.d/crashlens.sh
# It runs as SlurmdUser (root) on every node of the job when the job ends. On a failed job it
# starts `crashlens collect` detached (setsid, nohup, stdin closed), with the job's stdout and
# stderr files and `scontrol show job` (crashlens reads that record: its state decides, e.g.
# OUT_OF_MEMORY), then returns at once. It always exits 0: Slurm drains a node whose Epilog
# fails, and a diagnostic tool must never take a node out of service.
#
# Settings (environment of slurmd, or edit here):
#   CRASHLENS_BIN         the crashlens command      (default: crashlens on the PATH below)
#   CRASHLENS_BUNDLE_DIR  where bundles are written  (default: /var/spool/crashlens)
#   CRASHLENS_TIMEOUT     seconds per collect step   (default: 20)
#
# What Slurm gives an Epilog: SLURM_JOB_ID always; SLURM_JOB_EXIT_CODE (the job script's wait()
# status) and SLURM_JOB_DERIVED_EC (the highest step exit code, as "code:signal" or a number)
# when this Slurm version sets them; the rest comes from `scontrol show job`.

# Slurm runs epilogs with no search path: set one.
export PATH="/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin${PATH:+:$PATH}"
trap 'exit 0' EXIT  # whatever happens below, Slurm sees success

log() { logger -t crashlens-epilog -- "job ${SLURM_JOB_ID:-?}: $*" 2>/dev/null || true; }

# A wait() status or "code:signal": failed when either part is not zero.
nonzero() {
  local value="${1:-}" code signal
  [[ -z "$value" ]] && return 1
  code="${value%%:*}"
  signal="${value#*:}"
  [[ "$signal" == "$value" ]] && signal=0
  [[ "$code" =~ ^[0-9]+$ && "$signal" =~ ^[0-9]+$ ]] || return 1
  (( code != 0 || signal != 0 ))
}

field() {  # field NAME: a Key=Value of `scontrol show job`, as printed (no spaces in values)
  printf '%s\n' "$record" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}

main() {
  local job="${SLURM_JOB_ID:-}"
  [[ "$job" =~ ^[0-9_]+$ ]] || { log "no SLURM_JOB_ID: nothing to do"; return 0; }
  local bin="${CRASHLENS_BIN:-crashlens}"
  command -v "$bin" >/dev/null 2>&1 || { log "$bin not found: not collecting"; return 0; }

  record="$(timeout 10 scontrol show job "$job" 2>/dev/null || true)"
  local state
  state="$(field JobState)"
  local failed=no
  if nonzero "${SLURM_JOB_EXIT_CODE:-}" || nonzero "${SLURM_JOB_DERIVED_EC:-}"; then
    failed=yes
  elif [[ -z "${SLURM_JOB_EXIT_CODE:-}${SLURM_JOB_DERIVED_EC:-}" ]]; then
    # This Slurm sets neither: read the record's exit codes instead.
    if nonzero "$(field ExitCode)" || nonzero "$(field DerivedExitCode)"; then failed=yes; fi
  fi
  case "$state" in FAILED|OUT_OF_MEMORY|NODE_FAIL|BOOT_FAIL) failed=yes ;; esac
  [[ "$failed" == yes ]] || { log "did not fail (state ${state:-unknown}): not collecting"; return 0; }

  local dir="${CRASHLENS_BUNDLE_DIR:-/var/spool/crashlens}"
  mkdir -p -m 0700 "$dir" || { log "cannot create $dir"; return 0; }
  local host
  host="$(hostname -s 2>/dev/null || echo node)"
  local stem="$dir/job-$job-$host"
  local logs=()
  if [[ -n "$record" ]]; then
    printf '%s\n' "$record" > "$stem.scontrol.txt" && logs+=("$stem.scontrol.txt")
  fi
  local path
  for path in "$(field StdOut)" "$(field StdErr)"; do
    path="${path//%j/$job}"  # older Slurm prints the pattern, not the file name
    [[ -n "$path" && -f "$path" ]] && logs+=("$path")
  done
  log "failed (state ${state:-unknown}): collecting into $stem.tar.gz"
  setsid nohup "$bin" collect "${logs[@]}" --out "$stem.tar.gz" \
    --timeout "${CRASHLENS_TIMEOUT:-20}" </dev/null >"$stem.collect.log" 2>&1 &
  return 0
}

record=""
main "$@" || true
exit 0
