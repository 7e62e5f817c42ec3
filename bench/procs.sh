# procs.sh — sourced by the bench scripts: ending the processes a script
# started, by PID only.

# stop_pids PID...: SIGTERM each, wait up to 10 s for each to end, then
# SIGKILL the ones still there.
stop_pids() {
  local pid
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
}
