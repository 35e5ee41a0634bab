#!/usr/bin/env python3
"""regress.py — the figures of bench/regress.sh's run, against bench/baseline.json.

    bench/regress.py LOG_DIR BASELINE [--record] [--note TEXT]

LOG_DIR holds what regress.sh collected: server.tsv (run-all.sh's raw.tsv),
client-stdio.log, client-http.log, gateway.log and counts.log (any may be
missing: that part was skipped). Each timed figure is a ratio taken within
one round (the server's figures over the floor measured in the same round,
our client's over the reference client's, the gateway's over the server it
mounts), so a round's machine load weighs on both sides of it. The counted
figures (counts.log) are user-space instructions: the stdio server's per
round trip and the gateway's per proxied call, which repeat within a few
tenths of a per cent whatever the load. Per figure: the median over the
rounds and the spread (max - min of the rounds).

A figure regresses when its median is worse than the baseline's median by
more than its margin (15 % for timed figures, 5 % for counted ones) of the
baseline's median beyond the noise:

    higher is better:  median < base * (1 - margin) - noise
    lower is better:   median > base * (1 + margin) + noise
    noise = (spread in this run + spread in the baseline) / 2

i.e. the two medians may each sit anywhere in their own rounds' range
before the margin starts. A figure whose noise exceeds the margin is
flagged "noisy": the check still runs, but can hardly fail; re-run on a
quieter machine (or with more rounds) before trusting a pass.

Exit status: 0 all figures hold, 1 one or more regressed, 2 bad input.
With --record, the run's figures are written to BASELINE instead (with the
date, the load average and --note) and nothing is compared.
"""

import csv
import json
import os
import re
import statistics
import sys
import time

MARGIN = 0.15
# Instruction counts hardly move between runs: a smaller rise is already real.
COUNT_MARGIN = 0.05

# name -> (higher is better, what it is[, margin])
FIGURES = {
    "server.http_c1": (True, "HTTP c1 req/s / floor"),
    "server.http_c64": (True, "HTTP c64 req/s / floor"),
    "server.stdio_seq": (True, "stdio sequential rt/s / floor"),
    "server.stdio_pipe": (True, "stdio 64 in flight rt/s / floor"),
    "server.stdio_seq_ceiling": (True, "stdio sequential: ceiling (our answer, no server work) / floor"),
    "server.stdio_pipe_ceiling": (True, "stdio 64 in flight: ceiling (our answer, no server work) / floor"),
    "server.stdio_seq_of_ceiling": (True, "stdio sequential rt/s / ceiling"),
    "server.stdio_pipe_of_ceiling": (True, "stdio 64 in flight rt/s / ceiling"),
    "server.stdio_seq_lean": (True, "stdio sequential rt/s / floor, serverInfo _meta off"),
    "server.stdio_pipe_lean": (True, "stdio 64 in flight rt/s / floor, serverInfo _meta off"),
    "server.stdio_seq_lean_ceiling": (True, "stdio sequential: lean ceiling / floor"),
    "server.stdio_pipe_lean_ceiling": (True, "stdio 64 in flight: lean ceiling / floor"),
    "server.stdio_seq_lean_of_ceiling": (True, "stdio sequential, serverInfo _meta off / its ceiling"),
    "server.stdio_pipe_lean_of_ceiling": (True, "stdio 64 in flight, serverInfo _meta off / its ceiling"),
    "server.rss_mib": (False, "peak RSS MiB (HTTP and stdio, the larger)"),
    "client.stdio_seq": (True, "our client stdio seq / stdio-rtt"),
    "client.stdio_pipe": (True, "our client stdio 64 in flight / stdio-rtt"),
    "client.http_c1": (True, "our client HTTP c1 / wrk"),
    "client.http_c64": (True, "our client HTTP c64 / wrk"),
    "gateway.throughput_c1": (True, "gateway req/s / direct, c1"),
    "gateway.throughput_c64": (True, "gateway req/s / direct, c64"),
    "gateway.cpu_c1": (False, "gateway CPU per call / tickets CPU per request, c1"),
    "gateway.cpu_c64": (False, "gateway CPU per call / tickets CPU per request, c64"),
    "count.stdio_seq_instr": (False, "bench-echo instructions per round trip, sequential", COUNT_MARGIN),
    "count.stdio_pipe_instr": (False, "bench-echo instructions per round trip, 64 in flight", COUNT_MARGIN),
    "count.gateway_instr": (False, "gateway instructions per proxied call, c1", COUNT_MARGIN),
}


def server_figures(path):
    """Per-round ratios to the floor from run-all.sh's raw.tsv."""
    rows = list(csv.DictReader(open(path), delimiter="\t"))
    by = {}
    for r in rows:
        by[(r["rep"], r["peer"], r["test"])] = r
    reps = sorted({r["rep"] for r in rows}, key=int)
    out = {}
    tests = {"http-c1": "server.http_c1", "http-c64": "server.http_c64",
             "stdio-seq": "server.stdio_seq", "stdio-pipe": "server.stdio_pipe"}
    # Our server with the default answer and with the serverInfo _meta
    # configured off (the answer the floor's resembles), each with the
    # ceiling of its answer.
    kinds = [("switchboard", "ceiling", ""), ("switchboard-lean", "ceiling-lean", "_lean")]
    for rep in reps:
        for test, name in tests.items():
            floor = by.get((rep, "floor", test))
            if not floor or float(floor["rps"]) <= 0:
                continue
            for peer, ceiling_peer, kind in kinds:
                ours = by.get((rep, peer, test))
                if ours:
                    out.setdefault(name + kind, []).append(float(ours["rps"]) / float(floor["rps"]))
                # The ceiling (bench-echo --ceiling) sends our answer and
                # does nothing else: over the floor, what the answer itself
                # costs; ours over it, what the server's work costs.
                ceiling = by.get((rep, ceiling_peer, test))
                if ceiling:
                    out.setdefault(name + kind + "_ceiling", []).append(
                        float(ceiling["rps"]) / float(floor["rps"]))
                if ours and ceiling and float(ceiling["rps"]) > 0:
                    out.setdefault(name + kind + "_of_ceiling", []).append(
                        float(ours["rps"]) / float(ceiling["rps"]))
        rss = [float(by[(rep, "switchboard", t)]["peak_rss_kib"]) / 1024
               for t in tests if (rep, "switchboard", t) in by]
        if rss:
            out.setdefault("server.rss_mib", []).append(max(rss))
    return out


def client_stdio_figures(path):
    """`round R MODE stdio-rtt {json}` / `round R MODE ours {json}` lines."""
    seen = {}
    for line in open(path):
        m = re.match(r"round (\d+) (seq|pipe) (stdio-rtt|ours)\s+(\{.*\})", line)
        if m:
            seen.setdefault((m[1], m[2]), {})[m[3]] = json.loads(m[4])["rps"]
    out = {}
    for (_, mode), d in sorted(seen.items()):
        if "ours" in d and "stdio-rtt" in d and d["stdio-rtt"] > 0:
            out.setdefault(f"client.stdio_{mode}", []).append(d["ours"] / d["stdio-rtt"])
    return out


def client_http_figures(path):
    """`round R cN  wrk X req/s ... client Y req/s ... ratio Z` lines."""
    out = {}
    for line in open(path):
        m = re.match(r"round \d+ c(\d+)\s.*\bratio ([0-9.]+)", line)
        if m:
            out.setdefault(f"client.http_c{m[1]}", []).append(float(m[2]))
    return out


def gateway_figures(path):
    """gateway.sh's `round R cN KIND RPS req/s ... tickets T us  gateway G us` lines."""
    rounds = {}
    pat = re.compile(r"round (\d+) c(\d+)\s+(\w+)\s+([0-9.]+) req/s.*tickets\s+([0-9.]+) us\s+gateway\s+([0-9.]+) us")
    for line in open(path):
        m = pat.match(line)
        if m:
            rounds.setdefault((m[1], m[2]), {})[m[3]] = (float(m[4]), float(m[5]), float(m[6]))
    out = {}
    for (_, c), d in sorted(rounds.items()):
        if "direct" in d and "gateway" in d:
            (d_rps, d_tus, _), (g_rps, _, g_us) = d["direct"], d["gateway"]
            if d_rps > 0:
                out.setdefault(f"gateway.throughput_c{c}", []).append(g_rps / d_rps)
            if d_tus > 0:
                out.setdefault(f"gateway.cpu_c{c}", []).append(g_us / d_tus)
    return out


def count_figures(path):
    """`round R stdio MODE N instructions per round trip` lines (count.py)
    and `run R: ... N instructions per call` lines (gateway-ir.sh)."""
    out = {}
    for line in open(path):
        m = re.match(r"round \d+ stdio (seq|pipe) (\d+) instructions", line)
        if m:
            out.setdefault(f"count.stdio_{m[1]}_instr", []).append(float(m[2]))
        m = re.match(r"run \d+: .* (\d+) instructions per call", line)
        if m:
            out.setdefault("count.gateway_instr", []).append(float(m[1]))
    return out


def collect(log_dir):
    parts = [("server.tsv", server_figures), ("client-stdio.log", client_stdio_figures),
             ("client-http.log", client_http_figures), ("gateway.log", gateway_figures),
             ("counts.log", count_figures)]
    figures = {}
    for name, read in parts:
        path = os.path.join(log_dir, name)
        if os.path.exists(path):
            figures.update(read(path))
    return {k: {"median": statistics.median(v), "spread": max(v) - min(v),
                "rounds": [round(x, 4) for x in v]}
            for k, v in figures.items() if v}


def num(value):
    """A figure as printed: ratios with three decimals, counts whole."""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3f}"


def load_note():
    try:
        return "load average " + " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "load average unknown"


def main():
    args = sys.argv[1:]
    record = "--record" in args
    note = ""
    if "--note" in args:
        i = args.index("--note")
        note = args[i + 1]
        del args[i:i + 2]
    args = [a for a in args if a != "--record"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    log_dir, baseline_path = args
    run = collect(log_dir)
    if not run:
        print(f"regress: no figures in {log_dir}", file=sys.stderr)
        return 2
    if record:
        doc = {"recorded": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load": load_note(), "note": note, "margin": MARGIN,
               "figures": {k: run[k] for k in FIGURES if k in run}}
        with open(baseline_path, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(f"recorded {len(doc['figures'])} figures in {baseline_path} ({doc['load']})")
        return 0
    try:
        base = json.load(open(baseline_path))
    except (OSError, ValueError) as e:
        print(f"regress: cannot read {baseline_path}: {e}", file=sys.stderr)
        return 2
    print(f"baseline: {baseline_path}, recorded {base.get('recorded')} ({base.get('load')}) {base.get('note', '')}")
    print(f"this run: {load_note()}; a figure fails when it is worse than the baseline by more than "
          f"{MARGIN:.0%} of it ({COUNT_MARGIN:.0%} for instruction counts) beyond "
          f"noise = (this run's spread + the baseline's) / 2")
    print(f"{'figure':<30} {'baseline':>18} {'this run':>18} {'limit':>8}  verdict")
    failed = 0
    for name, (higher, what, *rest) in FIGURES.items():
        margin = rest[0] if rest else MARGIN
        b, r = base.get("figures", {}).get(name), run.get(name)
        if r is None:
            continue
        cur = f"{num(r['median'])} ±{num(r['spread'] / 2)}"
        if b is None:
            print(f"{name:<30} {'-':>18} {cur:>18} {'-':>8}  new (no baseline)")
            continue
        noise = (r["spread"] + b["spread"]) / 2
        if higher:
            limit = b["median"] * (1 - margin) - noise
            bad = r["median"] < limit
        else:
            limit = b["median"] * (1 + margin) + noise
            bad = r["median"] > limit
        verdict = "REGRESSED" if bad else "ok"
        if noise > margin * b["median"]:
            verdict += f" (noisy: the noise exceeds the {margin:.0%} margin)"
        failed += bad
        base_s = f"{num(b['median'])} ±{num(b['spread'] / 2)}"
        print(f"{name:<30} {base_s:>18} {cur:>18} {num(limit):>8}  {verdict}   [{what}; rounds {r['rounds']}]")
    missing = [k for k in base.get("figures", {}) if k not in run]
    if missing:
        print(f"not measured in this run: {', '.join(missing)}")
    print("REGRESSION" if failed else "no regression", f"({failed} of {len(run)} figures regressed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
