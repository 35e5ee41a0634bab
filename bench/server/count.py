#!/usr/bin/env python3
"""count.py — load-independent costs of a stdio server under the bench's driver.

    bench/server/count.py [--mode seq|pipe] [--window 64] [--rtt PATH] -- SERVER_CMD...

Drives SERVER_CMD with the shared bench's `stdio-rtt` (the same requests
run-all.sh sends) twice, with N1 and N2 timed requests, and prints the
difference divided by N2 - N1: what one more round trip costs the server,
start-up and warm-up cancelled out. Per round trip:

  instr       user-space instructions (valgrind cachegrind, no cache
              simulation; the server runs ~50x slower there, so in pipe mode
              the window is always full: the cost of a round trip when input
              comes in bursts)
  syscalls    every system call, and read / write / futex / epoll_wait alone
              (perf's syscall tracepoints; no hardware counters needed)
  cs          context switches (perf), vcs / ivcs voluntary and involuntary
              (getrusage of the server's process tree)
  cpu_us      server CPU time (perf task-clock), load-sensitive
  rps         round trips/s of the N2 run, load-sensitive, for reference

Both processes are pinned to CPU (default 1), as run-all.sh does. Needs
perf (software events and syscall tracepoints) and valgrind; set
NO_VALGRIND=1 to skip the instruction count, NO_PERF=1 to count only the
instructions (no perf needed then). Env: N1 (2000) N2 (22000)
CPU (1) RUNS (3: perf runs; the median of each figure is printed, and the
min-max spread of the per-request values next to it).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

EVENTS = {
    "syscalls": "raw_syscalls:sys_enter",
    "read": "syscalls:sys_enter_read",
    "write": "syscalls:sys_enter_write",
    "futex": "syscalls:sys_enter_futex",
    "epoll_wait": "syscalls:sys_enter_epoll_wait",
    "cs": "context-switches",
    "cpu_us": "task-clock",
}


def wrap_rusage(out, cmd):
    """Runs cmd with this process's stdio, then records its tree's rusage."""
    child = subprocess.Popen(cmd)
    _, status, ru = os.wait4(child.pid, 0)
    with open(out, "w") as f:
        json.dump({"vcs": ru.ru_nvcsw, "ivcs": ru.ru_nivcsw}, f)
    sys.exit(os.waitstatus_to_exitcode(status))


def drive(args, n, server_cmd):
    cmd = ["taskset", "-c", args.cpu, args.rtt, "--json", "--quiet-stderr",
           "--n", str(n), "--mode", args.mode, "--window", str(args.window),
           "--", *server_cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def perf_run(args, n):
    with tempfile.TemporaryDirectory() as d:
        perf_out, ru_out = os.path.join(d, "perf"), os.path.join(d, "ru")
        server = ["taskset", "-c", args.cpu, "perf", "stat", "-x,", "-o", perf_out,
                  "-e", ",".join(EVENTS.values()), "--", *args.cmd]
        wrapped = [sys.executable, __file__, "--wrap-rusage", ru_out, "--", *server]
        rtt = drive(args, n, wrapped)
        figures = {}
        for line in open(perf_out):
            parts = line.strip().split(",")
            if len(parts) < 3 or line.startswith("#"):
                continue
            for key, ev in EVENTS.items():
                if parts[2] == ev:
                    value = float(parts[0]) if parts[0] not in ("<not supported>", "<not counted>") else float("nan")
                    figures[key] = value * 1000.0 if key == "cpu_us" else value  # task-clock is in ms
        figures.update(json.load(open(ru_out)))
        figures["rps"] = rtt["rps"]
        return figures


def instructions(args, n):
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "vg")
        server = ["valgrind", "--tool=cachegrind", "--cache-sim=no",
                  "--cachegrind-out-file=/dev/null", f"--log-file={log}", *args.cmd]
        drive(args, n, server)
        text = open(log).read()
        m = re.search(r"I\s+refs:\s+([\d,]+)", text)
        if not m:
            sys.exit(f"count.py: no instruction count in valgrind's log:\n{text}")
        return int(m.group(1).replace(",", ""))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--wrap-rusage":
        wrap_rusage(sys.argv[2], sys.argv[4:])
    p = argparse.ArgumentParser(description="per-round-trip costs of a stdio server")
    p.add_argument("--mode", default="pipe", choices=["seq", "pipe"])
    p.add_argument("--window", type=int, default=64)
    p.add_argument("--rtt", default=os.environ.get("RTT", "stdio-rtt"))
    p.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    p.add_argument("cmd", nargs="+")
    args = p.parse_args()
    args.cpu = os.environ.get("CPU", "1")
    n1, n2 = int(os.environ.get("N1", "2000")), int(os.environ.get("N2", "22000"))
    runs = 0 if os.environ.get("NO_PERF") else int(os.environ.get("RUNS", "3"))
    per = {}
    for _ in range(runs):
        a, b = perf_run(args, n1), perf_run(args, n2)
        for k in b:
            v = b[k] if k == "rps" else (b[k] - a[k]) / (n2 - n1)
            per.setdefault(k, []).append(v)
    out = {}
    for k, vs in per.items():
        out[k] = {"median": statistics.median(vs), "min": min(vs), "max": max(vs)}
    if not os.environ.get("NO_VALGRIND"):
        i1, i2 = instructions(args, n1), instructions(args, n2)
        out["instr"] = {"median": (i2 - i1) / (n2 - n1)}
    result = {"mode": args.mode, "window": args.window if args.mode == "pipe" else 1,
              "cmd": " ".join(args.cmd), "n1": n1, "n2": n2, "runs": runs,
              "per_round_trip": out}
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['cmd']}  mode {args.mode}  (N {n1} -> {n2}, {runs} perf runs: median [min-max])")
    for k, v in out.items():
        spread = f"  [{v['min']:.4g} - {v['max']:.4g}]" if "min" in v else ""
        value = f"{v['median']:>12.0f}" if k == "instr" else f"{v['median']:>12.4g}"
        print(f"  {k:<11}{value}{spread}")


if __name__ == "__main__":
    main()
