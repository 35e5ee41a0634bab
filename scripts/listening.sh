# Sourced by the conformance scripts: `listening_url LOG PID WHAT` waits
# (up to 30 s) until the process PID prints its `http://…/mcp` address to
# LOG, and prints it; if PID exits first or never prints it, shows LOG and
# exits the script with status 2.
listening_url() {
  local log=$1 pid=$2 what=$3 url=""
  for _ in $(seq 300); do
    url=$(grep -o 'http://[^ ]*/mcp' "$log" | head -n1 || true)
    [[ -n $url ]] && { echo "$url"; return 0; }
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$log" >&2
      echo "$what exited before listening" >&2
      exit 2
    fi
    sleep 0.1
  done
  cat "$log" >&2
  echo "$what did not start" >&2
  exit 2
}
