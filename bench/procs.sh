# procs.sh — sourced by the bench scripts: ending the processes a script
# started, by PID only.

# stop_pids PID...: SIGTERM each, wait up to 10 s for each to end, then
# SIGKILL the ones still there. A PID of 0 or less (a slot not started
# yet) is skipped: kill would take it for the process group.
stop_pids() {
  local pid
  for pid in "$@"; do ((pid > 0)) && kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    ((pid > 0)) || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
}

# kill_pids PID...: SIGKILL each (a crash), and wait until each has gone.
kill_pids() {
  local pid
  for pid in "$@"; do
    ((pid > 0)) || continue
    disown "$pid" 2>/dev/null || true # so that bash reports no "Killed" job
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in "$@"; do
    ((pid > 0)) || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  done
}

# wait_ready URL...: until every URL's /readyz answers 200 (up to 60 s);
# fails otherwise.
wait_ready() {
  local ok u
  for _ in $(seq 1 300); do
    ok=0
    for u in "$@"; do
      [[ "$(curl -s -o /dev/null -w '%{http_code}' "$u/readyz")" == 200 ]] && ok=$((ok + 1))
    done
    ((ok == $#)) && return 0
    sleep 0.2
  done
  echo "not every member got ready: $*" >&2
  return 1
}

# bench_bins DIR: KVNODE and KVBENCH, built from this checkout into DIR
# unless the environment names them (bench/ab.sh builds two kvnodes).
bench_bins() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  if [[ -z ${KVNODE:-} ]]; then
    KVNODE=$1/kvnode
    (cd "$root" && CGO_ENABLED=0 go build -o "$KVNODE" ./cmd/kvnode)
  fi
  if [[ -z ${KVBENCH:-} ]]; then
    KVBENCH=$1/kvbench
    (cd "$root" && go build -o "$KVBENCH" ./cmd/kvbench)
  fi
}

# tail_logs FILE...: the last lines of each log that exists, on stderr (what
# a script shows when it fails).
tail_logs() {
  local f
  for f in "$@"; do [[ -f $f ]] && { echo "--- $(basename "$f") (last 15 lines)"; tail -15 "$f"; }; done >&2
  return 0
}
