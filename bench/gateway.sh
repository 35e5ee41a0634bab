#!/usr/bin/env bash
# gateway.sh — the gateway's own cost per call. The tickets demo server is
# loaded by wrk (the bench suite's http-load.sh with mcp-call.lua) directly,
# then through `switchboard serve --http` mounting it (an allow rule, so no
# call waits for an approval; an audit log, as a team gateway keeps one).
# Both servers are pinned to one CPU, wrk to another. For each figure:
# req/s, p50, p99 and the CPU each process spent per request (utime+stime
# from /proc/PID/stat before and after, divided by the requests served).
#
# It prints the ratios issue 13's targets use, medians over the rounds:
#   cpu ratio    gateway CPU per proxied call / tickets CPU per direct request
#                (target <= 2)
#   added p50    (proxied p50 - direct p50) / direct p50 at one connection
#                (target <= 1)
#   throughput   proxied req/s / direct req/s at 64 connections
# With OBS_FLAGS or OBS_ENV set, a second gateway runs with those extra
# serve flags / environment (e.g. OBS_FLAGS="--metrics" or
# OBS_ENV="OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"), and its CPU
# per call is compared with the plain gateway's (target <= 1.05).
#
# Usage: bench/gateway.sh
# Env:
#   BENCH_DIR     the bench suite (default ../shared/bench, relative to the repo)
#   BIN           a built switchboard binary (default: built with PROFILE)
#   PROFILE       cargo profile to build (default dist: what ships)
#   SERVER_CPU    the CPU both servers are pinned to (default 0)
#   LOADGEN_CPUS  the CPU(s) wrk is pinned to (default 1)
#   SECS          seconds per figure (default 5)    REPS  rounds (default 3)
#   PORT          first of four ports used (default 18391)
#   QUIET_WAIT    seconds to wait for the machine to go quiet before a figure
#                 (default 10)
#   AUDIT=0       no audit log
#   OBS_FLAGS     extra serve flags for the observed gateway (split on spaces)
#   OBS_ENV       extra environment for it (NAME=VALUE, space separated)
#   OTLP_SINK=1   start bench/otlp-sink.py (on wrk's CPU) and point the observed gateway's
#                 OTEL_EXPORTER_OTLP_ENDPOINT at it (adds to OBS_ENV)
#   UNAUDITED=1   also run a gateway with the same config but no audit log,
#                 measured like the others: the issue's own setup (serve
#                 mounting tickets, nothing more), and its CPU per call
#                 beside the plain gateway's is what the audit log costs
#   CONTROL_BIN   run the control gateway (CONTROL=1 implied) from another
#                 build: control / plain is then that build's CPU per call
#                 over BIN's, measured in the same rounds (an A/B of a change)
#   CONTROL=1     also run a second plain gateway, measured like the observed
#                 one: its CPU per call over the plain gateway's is this
#                 machine's noise floor for the observed/plain figure
#                 (ideally 1.00)
#   RT_PRIO       run the servers and wrk at SCHED_FIFO priority N (needs
#                 root): other work on the machine (builds) then cannot
#                 take their CPUs in the middle of a figure
#   FLOOR=1       also measure two proxies that only forward the same
#                 calls to tickets, pinned like the gateway, keep-alive to
#                 tickets: nginx (one process), the floor under any
#                 gateway's figures on this machine; and bare_proxy
#                 (crates/gateway/examples), tokio + hyper + hyper-util's
#                 pooled client with no MCP work, the floor under a gateway
#                 built on the same crates as ours
#   BARE_BIN      a built bare_proxy (default: built with PROFILE)
#   PACED_MS=N    also a third level, "64p": 64 connections each waiting N ms
#                 between its calls (wrk's delay), so every proxy serves
#                 about the same rate. At full speed the CPU per call is not
#                 like for like: a proxy that keeps up with wrk finds it
#                 always busy, a slower one finds it asleep and pays a
#                 wake-up (an IPI; costly in a VM) on nearly every answer
#                 (wrk's own context switches per request show it). With
#                 the rate fixed, wrk sleeps alike for all of them.
#   AUTH=1        every gateway runs with `--auth token` (one named token)
#                 and wrk sends it as a bearer: what a team gateway does,
#                 and what `--console` needs (OBS_FLAGS=--console then
#                 measures the console's cost on the call path)
#   STORE=1       the cost of the shared store on a limited call (implies
#                 AUTH=1, the limit being a caller's): beside the plain
#                 gateway, two gateways whose config limits the caller
#                 (`callerLimits`, set high enough never to refuse), one
#                 counting in memory ("limited") and one in a redis-server
#                 on loopback (`--state redis://…`, "store"; redis pinned
#                 with the servers, its CPU per call shown beside the
#                 gateway's); prints the added p50 and CPU per call of the
#                 store over the in-memory count, and the store's commands
#                 per call from INFO commandstats (target: one round trip,
#                 an EVALSHA, per limited call)
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_DIR=$(cd "${BENCH_DIR:-../shared/bench}" && pwd)
SERVER_CPU=${SERVER_CPU:-0}; LOADGEN_CPUS=${LOADGEN_CPUS:-1}
SECS=${SECS:-5}; REPS=${REPS:-3}; PORT=${PORT:-18391}
QUIET_WAIT=${QUIET_WAIT:-10}; PROFILE=${PROFILE:-dist}
TICKS=$(getconf CLK_TCK)
rt=(); [[ -n ${RT_PRIO:-} ]] && rt=(chrt -f "$RT_PRIO")

# shellcheck source=bench/common.sh
source bench/common.sh
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
build_switchboard
[[ -n ${STORE:-} ]] && AUTH=1
if [[ -n ${FLOOR:-} && -z ${BARE_BIN:-} ]]; then
  cargo build --locked --quiet --profile "$PROFILE" -p switchboard-gateway --example bare_proxy
  BARE_BIN=$(target_dir)/$PROFILE/examples/bare_proxy
fi
start_scratch gateway-bench
# The load script: the bench suite's, or with AUTH=1 a copy of it whose
# requests carry the gateway's bearer token (the check request is skipped:
# it sends none).
load_dir=$BENCH_DIR; auth_flags=()
if [[ -n ${AUTH:-} ]]; then
  load_dir=$work/load; mkdir -p "$load_dir"
  cp "$BENCH_DIR/http-load.sh" "$load_dir/"
  { cat "$BENCH_DIR/mcp-call.lua"; echo 'wrk.headers["Authorization"] = "Bearer " .. os.getenv("MCP_BEARER")'; } \
    >"$load_dir/mcp-call.lua"
  export MCP_BEARER=bench-token-0123456789abcdef SKIP_CHECK=1
  printf 'bench %s\n' "$MCP_BEARER" >"$work/tokens.txt"; chmod 600 "$work/tokens.txt"
  auth_flags=(--auth token --tokens-file "$work/tokens.txt")
fi

# PACED_MS: the same load script, with wrk waiting between a connection's calls.
paced_dir=""
if [[ -n ${PACED_MS:-} ]]; then
  export PACED_MS
  paced_dir=$work/paced; mkdir -p "$paced_dir"
  cp "$load_dir/http-load.sh" "$paced_dir/"
  { cat "$load_dir/mcp-call.lua"; echo 'delay = function() return tonumber(os.getenv("PACED_MS")) end'; } \
    >"$paced_dir/mcp-call.lua"
fi
levels=(1 64); [[ -n $paced_dir ]] && levels+=(64p)

tickets_port=$PORT; gw_port=$((PORT + 1)); obs_port=$((PORT + 2)); floor_port=$((PORT + 4))
bare_port=$((PORT + 5)); control_port=$((PORT + 6)); unaudited_port=$((PORT + 7))
redis_port=$((PORT + 8)); limited_port=$((PORT + 9)); store_port=$((PORT + 10))
"${rt[@]}" taskset -c "$SERVER_CPU" "$BIN" demo-server tickets --port "$tickets_port" 2>"$work/tickets.log" &
tickets_pid=$!; pids+=("$tickets_pid")
wait_up "http://127.0.0.1:$tickets_port/mcp"

audit_line='"audit": "audit.jsonl",'
[[ ${AUDIT:-1} == 0 ]] && audit_line=""
cat >"$work/config.json" <<EOF
{
  $audit_line
  "mcpServers": {
    "tickets": {
      "url": "http://127.0.0.1:$tickets_port/mcp",
      "permissions": {"allow": ["*"]}
    }
  }
}
EOF
if [[ -n ${UNAUDITED:-} ]]; then
  grep -v '"audit":' "$work/config.json" >"$work/config-unaudited.json"
fi
# A gateway of its own state (token store, lockfile) under $work.
start_gateway() { # PORT LOG [ENV...] -- [FLAGS...]
  local port=$1 log=$2; shift 2
  local env=()
  while [[ $# -gt 0 && $1 != -- ]]; do env+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift
  env SWITCHBOARD_CONFIG="$work/config.json" SWITCHBOARD_STATE_DIR="$work/state" "${env[@]}" \
    "${rt[@]}" taskset -c "$SERVER_CPU" "${GATEWAY_BIN:-$BIN}" serve --http "127.0.0.1:$port" "${auth_flags[@]}" "$@" 2>"$log" &
  pids+=("$!")
  wait_up "http://127.0.0.1:$port/mcp"
}
start_gateway "$gw_port" "$work/gw.log"
gw_pid=${pids[-1]}
obs_pid=""
if [[ -n ${OTLP_SINK:-} ]]; then
  sink_port=$((PORT + 3))
  # On wrk's CPU: the sink is load, like wrk; on the servers' CPU it would
  # take time from the gateway it measures.
  taskset -c "$LOADGEN_CPUS" python3 bench/otlp-sink.py "$sink_port" 2>"$work/otlp-sink.log" &
  pids+=("$!")
  OBS_ENV="${OBS_ENV:-} OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port"
fi
if [[ -n ${OBS_FLAGS:-}${OBS_ENV:-} ]]; then
  # shellcheck disable=SC2086 # split on purpose
  start_gateway "$obs_port" "$work/obs.log" ${OBS_ENV:-} -- ${OBS_FLAGS:-}
  obs_pid=${pids[-1]}
fi
control_pid=""
if [[ -n ${CONTROL:-}${CONTROL_BIN:-} ]]; then
  GATEWAY_BIN=${CONTROL_BIN:-$BIN} start_gateway "$control_port" "$work/control.log"
  control_pid=${pids[-1]}
fi

limited_pid=""; store_pid=""; redis_pid=""
if [[ -n ${STORE:-} ]]; then
  command -v redis-server >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-server; }
  # The caller's limit, high enough never to refuse a call of the bench:
  # every call is counted, none is turned away.
  sed '1a\  "callerLimits": {"callsPerMinute": 1000000},' "$work/config.json" >"$work/config-limited.json"
  mkdir -p "$work/redis"
  "${rt[@]}" taskset -c "$SERVER_CPU" redis-server --port "$redis_port" --bind 127.0.0.1 \
    --save "" --appendonly no --dir "$work/redis" >"$work/redis.log" 2>&1 &
  redis_pid=$!; pids+=("$redis_pid")
  for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  start_gateway "$limited_port" "$work/limited.log" SWITCHBOARD_CONFIG="$work/config-limited.json" --
  limited_pid=${pids[-1]}
  start_gateway "$store_port" "$work/store.log" SWITCHBOARD_CONFIG="$work/config-limited.json" \
    SWITCHBOARD_STATE_KEY=bench-state-key-0123456789abcdef0123456789 -- \
    --replica bench --state "redis://127.0.0.1:$redis_port/0"
  store_pid=${pids[-1]}
fi

unaudited_pid=""
if [[ -n ${UNAUDITED:-} ]]; then
  start_gateway "$unaudited_port" "$work/unaudited.log" SWITCHBOARD_CONFIG="$work/config-unaudited.json" --
  unaudited_pid=${pids[-1]}
fi

floor_pid=""
if [[ -n ${FLOOR:-} ]]; then
  command -v nginx >/dev/null || { apt-get update -qq && apt-get install -y -qq nginx; }
  cat >"$work/nginx.conf" <<NGINX
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx-body;
  proxy_temp_path $work/nginx-proxy;
  upstream tickets { server 127.0.0.1:$tickets_port; keepalive 64; }
  server {
    listen 127.0.0.1:$floor_port;
    location / {
      proxy_pass http://tickets;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host 127.0.0.1:$tickets_port;
      proxy_buffering off;
    }
  }
}
NGINX
  "${rt[@]}" taskset -c "$SERVER_CPU" nginx -c "$work/nginx.conf" -p "$work" &
  floor_pid=$!; pids+=("$floor_pid")
  wait_up "http://127.0.0.1:$floor_port/mcp"
  "${rt[@]}" taskset -c "$SERVER_CPU" "$BARE_BIN" "127.0.0.1:$bare_port" "http://127.0.0.1:$tickets_port" \
    2>"$work/bare.log" &
  bare_pid=$!; pids+=("$bare_pid")
  wait_up "http://127.0.0.1:$bare_port/mcp"
fi

jiffies() { awk '{print $14 + $15}' "/proc/$1/stat"; }
busy_jiffies() { awk '/^cpu / {print $2+$3+$4+$7+$8}' /proc/stat; }
child_centis() { # user+sys of this shell's finished children, in 1/100 s
  times | tail -n 1 | awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 6000 + a[2] * 100 } } END { printf "%d", t }'
}
busy_now() { local b; b=$(busy_jiffies); sleep 0.5; echo $(( ($(busy_jiffies) - b) * 200 / TICKS )); }
wait_quiet() { # until the whole machine is < 10 % busy, or QUIET_WAIT s
  local end=$((SECONDS + QUIET_WAIT))
  while (( SECONDS < end )); do
    (( $(busy_now) < 10 )) && return 0
  done
  return 0
}
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<" $2"; }
us_per() { echo "$1 * 1000000 / $TICKS / $2" | bc -l; } # jiffies, requests

# One figure: wrk at URL with C connections calling TOOL; sets R (the
# RESULT line), T_US / G_US / X_US (tickets / gateway / EXTRA_PID's CPU µs
# per request) and OTHER (% of one CPU used by anything else meanwhile).
figure() { # URL C TOOL GATEWAY_PID [EXTRA_PID]   (C: 1, 64, or 64p: paced)
  local url=$1 c=$2 tool=$3 gw=${4:-} extra=${5:-} dir=$load_dir
  [[ $c == 64p ]] && { dir=$paced_dir; c=64; }
  wait_quiet
  local t0 g0=0 x0=0 b0 c0 t1 g1=0 x1=0 b1 c1 s0 s1
  t0=$(jiffies "$tickets_pid"); [[ -n $gw ]] && g0=$(jiffies "$gw"); [[ -n $extra ]] && x0=$(jiffies "$extra")
  b0=$(busy_jiffies); c0=$(child_centis); s0=$(date +%s%N)
  R=$(MCP_TOOL=$tool MCP_ARGS='{"id":"T-1"}' RAW=1 LOADGEN_CPUS=$LOADGEN_CPUS \
    "${rt[@]}" "$dir/http-load.sh" "$url" "$c" "$SECS")
  t1=$(jiffies "$tickets_pid"); [[ -n $gw ]] && g1=$(jiffies "$gw"); [[ -n $extra ]] && x1=$(jiffies "$extra")
  b1=$(busy_jiffies); c1=$(child_centis); s1=$(date +%s%N)
  local n; n=$(field requests "$R")
  local errs; errs=$(( $(field err_connect "$R") + $(field err_read "$R") + $(field err_write "$R") + $(field err_status "$R") + $(field err_timeout "$R") ))
  (( errs == 0 )) || { echo "wrk saw $errs errors at $url: $R" >&2; exit 1; }
  T_US=$(us_per $((t1 - t0)) "$n"); G_US=$(us_per $((g1 - g0)) "$n"); X_US=$(us_per $((x1 - x0)) "$n")
  N_REQ=$n
  local wall_ticks=$(( (s1 - s0) * TICKS / 1000000000 ))
  local ours=$(( (t1 - t0) + (g1 - g0) + (x1 - x0) + (c1 - c0) * TICKS / 100 ))
  OTHER=$(( ((b1 - b0) - ours) * 100 / (wall_ticks > 0 ? wall_ticks : 1) ))
  (( OTHER < 0 )) && OTHER=0
  return 0
}

declare -A RPS P50 P99 TUS GUS XUS
echo "servers on CPU $SERVER_CPU, wrk on CPU $LOADGEN_CPUS${RT_PRIO:+, SCHED_FIFO $RT_PRIO}; $SECS s per figure, $REPS rounds; tool get_ticket; binary $BIN"
[[ ${AUDIT:-1} == 0 ]] && echo "no audit log" || echo "audit log on"
[[ -n ${AUTH:-} ]] && echo "gateways with --auth token, wrk sending the bearer"
[[ -n $obs_pid ]] && echo "observed gateway: flags '${OBS_FLAGS:-}' env '${OBS_ENV:-}'"
[[ -n $unaudited_pid ]] && echo "unaudited: a gateway with the same config but no audit log"
[[ -n $floor_pid ]] && echo "floors: nginx and bare_proxy proxying to tickets (their CPU in the gateway column)"
[[ -n $store_pid ]] && echo "store: 'limited' counts the caller's calls in memory, 'store' in redis-server on loopback (its CPU in the redis column)"
# Warm-up, discarded.
warm=("http://127.0.0.1:$tickets_port/mcp" "http://127.0.0.1:$gw_port/mcp")
[[ -n $unaudited_pid ]] && warm+=("http://127.0.0.1:$unaudited_port/mcp")
[[ -n $store_pid ]] && warm+=("http://127.0.0.1:$limited_port/mcp" "http://127.0.0.1:$store_port/mcp")
[[ -n $floor_pid ]] && warm+=("http://127.0.0.1:$floor_port/mcp" "http://127.0.0.1:$bare_port/mcp")
for url in "${warm[@]}"; do
  tool=get_ticket; [[ $url != *":$tickets_port/"* && $url != *":$floor_port/"* && $url != *":$bare_port/"* ]] && tool=mcp__tickets__get_ticket
  MCP_TOOL=$tool MCP_ARGS='{"id":"T-1"}' RAW=1 LOADGEN_CPUS=$LOADGEN_CPUS \
    "$load_dir/http-load.sh" "$url" 64 2 >/dev/null
done
kinds=(direct gateway); [[ -n $obs_pid ]] && kinds+=(observed); [[ -n $control_pid ]] && kinds+=(control)
[[ -n $unaudited_pid ]] && kinds+=(unaudited)
[[ -n $floor_pid ]] && kinds+=(nginx bare)
[[ -n $store_pid ]] && kinds+=(limited store)
for r in $(seq "$REPS"); do
  # After the direct figure, the proxies go in one order in odd rounds and
  # the reverse in even ones, so a machine that drifts during a round does
  # not always favour the same one.
  order=("${kinds[@]}")
  if (( r % 2 == 0 )); then
    order=(direct)
    for (( i = ${#kinds[@]} - 1; i >= 1; i-- )); do order+=("${kinds[$i]}"); done
  fi
  for c in "${levels[@]}"; do
    for k in "${order[@]}"; do
      case $k in
        direct) figure "http://127.0.0.1:$tickets_port/mcp" "$c" get_ticket ;;
        gateway) figure "http://127.0.0.1:$gw_port/mcp" "$c" mcp__tickets__get_ticket "$gw_pid" ;;
        observed) figure "http://127.0.0.1:$obs_port/mcp" "$c" mcp__tickets__get_ticket "$obs_pid" ;;
        control) figure "http://127.0.0.1:$control_port/mcp" "$c" mcp__tickets__get_ticket "$control_pid" ;;
        unaudited) figure "http://127.0.0.1:$unaudited_port/mcp" "$c" mcp__tickets__get_ticket "$unaudited_pid" ;;
        nginx) figure "http://127.0.0.1:$floor_port/mcp" "$c" get_ticket "$floor_pid" ;;
        bare) figure "http://127.0.0.1:$bare_port/mcp" "$c" get_ticket "$bare_pid" ;;
        limited) figure "http://127.0.0.1:$limited_port/mcp" "$c" mcp__tickets__get_ticket "$limited_pid" ;;
        store) figure "http://127.0.0.1:$store_port/mcp" "$c" mcp__tickets__get_ticket "$store_pid" "$redis_pid" ;;
      esac
      RPS[$k,$c,$r]=$(field rps "$R"); P50[$k,$c,$r]=$(field p50_us "$R"); P99[$k,$c,$r]=$(field p99_us "$R")
      TUS[$k,$c,$r]=$T_US; GUS[$k,$c,$r]=$G_US; XUS[$k,$c,$r]=$X_US
      printf 'round %s c%-3s %-8s %9.1f req/s  p50 %6s us  p99 %6s us  CPU/req: tickets %6.1f us  gateway %6.1f us%s  other load %s%%\n' \
        "$r" "$c" "$k" "${RPS[$k,$c,$r]}" "${P50[$k,$c,$r]}" "${P99[$k,$c,$r]}" "$T_US" "$G_US" \
        "$([[ $k == store ]] && printf '  redis %6.1f us' "$X_US")" "$OTHER"
    done
  done
done

med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The median over the rounds of an expression of one round's figures.
over_rounds() { # EXPR-FUNCTION ARGS...
  local f=$1; shift
  local vals=()
  for r in $(seq "$REPS"); do vals+=("$("$f" "$r" "$@")"); done
  med "${vals[@]}"
}
cpu_ratio() { echo "${GUS[$2,$3,$1]} / ${TUS[direct,$3,$1]}" | bc -l; }
added_p50() { echo "(${P50[$2,1,$1]} - ${P50[direct,1,$1]}) / ${P50[direct,1,$1]}" | bc -l; }
tput() { echo "${RPS[$2,$3,$1]} / ${RPS[direct,$3,$1]}" | bc -l; }
obs_cost() { echo "${GUS[$3,$2,$1]} / ${GUS[gateway,$2,$1]}" | bc -l; }
pick() { local -n arr=$2; echo "${arr[$3,$4,$1]}"; } # round ARRAY kind c

echo "medians over $REPS rounds:"
for k in "${kinds[@]}"; do
  for c in "${levels[@]}"; do
    printf '  c%-3s %-8s %9.1f req/s  p50 %6s us  p99 %6s us  CPU/req: tickets %6.1f us  gateway %6.1f us\n' "$c" "$k" \
      "$(over_rounds pick RPS "$k" "$c")" "$(over_rounds pick P50 "$k" "$c")" "$(over_rounds pick P99 "$k" "$c")" \
      "$(over_rounds pick TUS "$k" "$c")" "$(over_rounds pick GUS "$k" "$c")"
  done
done
for k in "${kinds[@]:1}"; do
  printf '%s: cpu ratio (gateway CPU/call / tickets CPU/direct request) c1 %.2f  c64 %.2f  (target <= 2)\n' "$k" \
    "$(over_rounds cpu_ratio "$k" 1)" "$(over_rounds cpu_ratio "$k" 64)"
  printf '%s: added p50 at c1 / direct p50 %.2f  (target <= 1)\n' "$k" "$(over_rounds added_p50 "$k")"
  printf '%s: throughput ratio c1 %.2f  c64 %.2f\n' "$k" "$(over_rounds tput "$k" 1)" "$(over_rounds tput "$k" 64)"
done
floor_cost() { echo "${GUS[$4,$2,$1]} / ${GUS[$3,$2,$1]}" | bc -l; } # round c floor kind
added_over() { # round floor kind; nan when the floor added nothing measurable
  awk -v g="${P50[$3,1,$1]}" -v d="${P50[direct,1,$1]}" -v f="${P50[$2,1,$1]}" \
    'BEGIN { if (f - d > 0) printf "%.6f", (g - d) / (f - d); else print "nan" }'
}
[[ -n $unaudited_pid ]] && kinds_floor=(unaudited) || kinds_floor=()
[[ -n $floor_pid ]] && kinds_floor+=(nginx bare)
# The gateway over each floor; with UNAUDITED=1 the unaudited gateway (the
# issue's own setup, nothing but serve mounting tickets) over them too.
numerators=(gateway); [[ -n $unaudited_pid && -n $floor_pid ]] && numerators+=(unaudited)
for g in "${numerators[@]}"; do
  for k in "${kinds_floor[@]}"; do
    [[ $k == "$g" ]] && continue
    printf '%s / %s CPU per call: c1 %.2f  c64 %.2f%s\n' "$g" "$k" \
      "$(over_rounds floor_cost 1 "$k" "$g")" "$(over_rounds floor_cost 64 "$k" "$g")" \
      "$([[ -n $paced_dir ]] && printf '  c64 paced (%s ms) %.2f' "$PACED_MS" "$(over_rounds floor_cost 64p "$k" "$g")")"
    [[ $k == unaudited ]] && continue
    printf '%s / %s added p50 at c1: %.2f\n' "$g" "$k" "$(over_rounds added_over "$k" "$g")"
  done
done
if [[ -n $obs_pid ]]; then
  printf 'observed / plain gateway CPU per call: c1 %.3f  c64 %.3f  (target <= 1.05)\n' \
    "$(over_rounds obs_cost 1 observed)" "$(over_rounds obs_cost 64 observed)"
fi
if [[ -n $control_pid ]]; then
  what='a second plain gateway'; [[ -n ${CONTROL_BIN:-} ]] && what="the plain gateway built as $CONTROL_BIN"
  printf 'control (%s) / plain gateway CPU per call: c1 %.3f  c64 %.3f  (a second plain gateway: the noise floor, ideally 1)\n' "$what" \
    "$(over_rounds obs_cost 1 control)" "$(over_rounds obs_cost 64 control)"
fi
if [[ -n $store_pid ]]; then
  # The store against the in-memory count, same config, same rounds.
  store_p50() { echo "${P50[store,1,$1]} - ${P50[limited,1,$1]}" | bc -l; }
  store_cpu() { echo "${GUS[store,$2,$1]} - ${GUS[limited,$2,$1]}" | bc -l; }
  store_all() { echo "${GUS[store,$2,$1]} + ${XUS[store,$2,$1]} - ${GUS[limited,$2,$1]}" | bc -l; }
  limit_cpu() { echo "${GUS[limited,$2,$1]} - ${GUS[gateway,$2,$1]}" | bc -l; }
  printf 'store vs in-memory limit: added p50 at c1 %.0f us  (target <= 100 us)\n' "$(over_rounds store_p50)"
  printf 'store vs in-memory limit: added gateway CPU per call c1 %.1f us  c64 %.1f us; with redis-server'"'"'s c1 %.1f us  c64 %.1f us\n' \
    "$(over_rounds store_cpu 1)" "$(over_rounds store_cpu 64)" "$(over_rounds store_all 1)" "$(over_rounds store_all 64)"
  printf 'in-memory limit vs no limit: added gateway CPU per call c1 %.1f us  c64 %.1f us\n' \
    "$(over_rounds limit_cpu 1)" "$(over_rounds limit_cpu 64)"
  # Round trips per limited call: the commands clients sent the store
  # (MONITOR shows them, and apart from them, marked `lua`, those the
  # scripts ran) over one more figure's calls; the replica's heartbeat
  # adds a few, shown apart. INFO commandstats' EVALSHA count checks it.
  redis-cli -p "$redis_port" config resetstat >/dev/null
  redis-cli -p "$redis_port" monitor >"$work/monitor.txt" &
  monitor_pid=$!; pids+=("$monitor_pid")
  sleep 0.2
  figure "http://127.0.0.1:$store_port/mcp" 1 mcp__tickets__get_ticket "$store_pid" "$redis_pid"
  sleep 0.2; kill "$monitor_pid" 2>/dev/null || true
  sent=$(grep -c '\[[0-9]* 127\.0\.0\.1:' "$work/monitor.txt" || true)
  evalsha=$(grep -c '\[[0-9]* 127\.0\.0\.1:[0-9]*\] "EVALSHA"' "$work/monitor.txt" || true)
  others=$(grep '\[[0-9]* 127\.0\.0\.1:' "$work/monitor.txt" | grep -v '"EVALSHA"' |
    sed -n 's/.*\] "\([A-Za-z]*\)".*/\1/p' | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')
  counted=$(redis-cli -p "$redis_port" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
  printf 'store round trips over %s limited calls: %s EVALSHA (%.3f per call; commandstats: %s), %s commands sent in all (the rest: %s)\n' \
    "$N_REQ" "$evalsha" "$(echo "$evalsha / $N_REQ" | bc -l)" "${counted:-0}" "$sent" "${others%, }"
fi
