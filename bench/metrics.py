#!/usr/bin/env python3
"""The runs of bench/metrics (start it through that script, which builds dbduel, installs the
servers and removes every sandbox afterwards).

What `dbduel run --metrics-listen` costs the run it watches. The endpoint reads the per-second
records the run writes anyway, so it should cost nothing measurable on the hot path:

1. Overhead: one MariaDB sandbox holding the sbtest tables; dbduel's `oltp` point_select step
   without the endpoint (A) and with it (B), scraped once a second by a thread of this script
   as Prometheus would, alternating A B A B with the same clients and duration. Figures: each
   run's QPS and dbduel's CPU per query; the ratio B / A per round and over all rounds
   (target: 0.99 or more), and each scrape's time.
2. Scrape time at 1,000 clients: a `queries` step of 1,000 clients on the dry engine (each
   statement takes 50 ms, as a loaded server's would), scraped once a second; every scrape's
   time (target: under 50 ms) and the body's size.
"""

import datetime
import os
import socket
import statistics
import threading
import time

from vs_peers import (bench_args, dbduel_run, dbduel_study, env_int, git_commit, log, sbtest_sandbox,
                      secret_file, write_results)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path):
    """One HTTP GET on loopback: (seconds it took, body bytes), or None while nothing listens."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError:
        return None
    if not data.startswith(b"HTTP/1.1 200"):
        return None
    return time.monotonic() - t0, len(data.split(b"\r\n\r\n", 1)[-1])


def endpoint_cpu_s():
    """CPU seconds so far of the endpoint's thread (`metrics-listen`) of a running dbduel,
    from the scheduler's own clock (/proc/PID/task/TID/schedstat, nanoseconds on the CPU);
    None when it is not found."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "dbduel":
                    continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if f.read().strip() != "metrics-listen":
                        continue
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    return int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return None


class Scraper:
    """Scrapes http://127.0.0.1:PORT/metrics once a second on its own thread until stopped,
    and reads the endpoint thread's own CPU after each scrape."""

    def __init__(self, port):
        self.port, self.times_ms, self.sizes, self.cpu_s = port, [], [], None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(1.0):
            r = get(self.port, "/metrics")
            if r:
                self.times_ms.append(r[0] * 1000)
                self.sizes.append(r[1])
                cpu = endpoint_cpu_s()
                if cpu is not None:
                    self.cpu_s = cpu

    def finish(self):
        self.stop.set()
        self.thread.join()
        t = sorted(self.times_ms)
        return {
            "scrapes": len(t),
            "scrape_ms_p50": statistics.median(t) if t else None,
            "scrape_ms_max": t[-1] if t else None,
            "body_bytes_max": max(self.sizes) if self.sizes else None,
            # the endpoint's thread, start to last scrape: what the scrapes cost dbduel
            "endpoint_cpu_s": self.cpu_s,
        }


def run_with(a, label, study, scraped):
    """One dbduel run of `study`; with `scraped`, listening on a port scraped each second."""
    extra, scraper = (), None
    if scraped:
        port = free_port()
        extra = ("--metrics-listen", str(port))
        scraper = Scraper(port)
    r = dbduel_run(a.dbduel, a.work, label, study, extra=extra)
    r["scrape"] = scraper.finish() if scraper else None
    return r


def overhead(a, out):
    sb = sbtest_sandbox(a, "mariadb")
    target = f"mysql://root@127.0.0.1:{sb['port']}/dbduel_oltp"
    study = dbduel_study(target, "mariadb", f"""kind = "oltp"
workload = "point_select"
threads = {a.threads}
duration_s = {a.duration}
final_fraction = 1.0
distribution = "special\"""", password_file=secret_file(sb))
    runs = {"off": [], "on": []}
    for i in range(a.rounds):
        for who in ("off", "on"):
            label = f"point_select-t{a.threads}-r{i + 1}-metrics-{who}"
            r = run_with(a, label, study, who == "on")
            lv = r["step"]["details"]["levels"][0]
            queries = lv["qps"] * lv["measured_s"]
            m = {"qps": lv["qps"], "queries": queries, "cpu_s": r["cpu_s"],
                 "cpu_us_per_query": r["cpu_s"] * 1e6 / max(queries, 1), "scrape": r["scrape"]}
            runs[who].append(m)
            log(f"  {label}: {m['qps']:,.0f} qps, dbduel {m['cpu_us_per_query']:.2f} µs/query"
                + (f", {r['scrape']['scrapes']} scrapes, p50 {r['scrape']['scrape_ms_p50']:.2f} ms"
                   if r["scrape"] and r["scrape"]["scrapes"] else ""))
    ratios = [b["qps"] / a_["qps"] for a_, b in zip(runs["off"], runs["on"])]
    mean = lambda ms, k: sum(m[k] for m in ms) / len(ms)
    out["overhead"] = {
        "server_version": sb.get("server_version"), "threads": a.threads, "runs": runs,
        "ratio": mean(runs["on"], "qps") / mean(runs["off"], "qps"), "round_ratios": ratios,
        "scrape_ms": [t for m in runs["on"] for t in [m["scrape"]["scrape_ms_max"]] if t],
    }


def thousand_clients(a, out):
    clients = 1000
    study = f"""[study]
name = "metrics-1000"
description = "bench/metrics: a 1,000-client step scraped each second"
[dataset]
generator = "sbtest"
rows = 1000
[[contender]]
name = "dbduel"
engine = "dry"
options = {{ delay_us = 50000 }}
[[step]]
name = "run"
kind = "queries"
clients = {clients}
duration_s = {a.duration}
queries = ["SELECT c FROM sbtest1 WHERE id = 1"]
"""
    r = run_with(a, "dry-1000-clients", study, True)
    out["thousand_clients"] = {"clients": clients, "scrape": r["scrape"], "cpu_s": r["cpu_s"]}
    s = r["scrape"]
    log(f"  1,000 clients: {s['scrapes']} scrapes, p50 {s['scrape_ms_p50']:.2f} ms, "
        f"max {s['scrape_ms_max']:.2f} ms, {s['body_bytes_max']} bytes, endpoint thread "
        f"{(s['endpoint_cpu_s'] or 0) * 1000:.1f} ms of CPU")


def main():
    a = bench_args(__doc__)
    a.duration = env_int("BENCH_DURATION_S", 20)
    a.rounds = env_int("BENCH_ROUNDS", 4)
    a.threads = env_int("BENCH_THREADS", 8)
    started = datetime.datetime.now(datetime.timezone.utc)
    out = {"schema_version": 1, "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
           "dbduel_commit": git_commit(), "cores": os.cpu_count(),
           "settings": {"duration_s": a.duration, "rounds": a.rounds, "threads": a.threads}}
    log(f"metrics: {a.duration} s a run, {a.rounds} round(s) of without / with the endpoint")
    overhead(a, out)
    thousand_clients(a, out)
    path = write_results(a.results, "metrics", started, out)
    o, t = out["overhead"], out["thousand_clients"]["scrape"]
    off, on = o["runs"]["off"], o["runs"]["on"]
    cpu = lambda ms: sum(m["cpu_s"] for m in ms) * 1e6 / max(sum(m["queries"] for m in ms), 1)
    print()
    print(f"point_select @{a.threads} on mariadb {o['server_version']}: without the endpoint "
          f"{sum(m['qps'] for m in off) / len(off):,.0f} qps, with it (scraped each second) "
          f"{sum(m['qps'] for m in on) / len(on):,.0f} qps: ratio {o['ratio']:.3f} "
          f"(rounds {min(o['round_ratios']):.3f}–{max(o['round_ratios']):.3f}; target >= 0.99); "
          f"dbduel CPU {cpu(off):.2f} / {cpu(on):.2f} µs/query")
    ep = [m["scrape"]["endpoint_cpu_s"] for m in on if m["scrape"]["endpoint_cpu_s"] is not None]
    if ep:
        print(f"the endpoint's own thread: {sum(ep) * 1000 / len(ep):.1f} ms of CPU a run "
              f"({sum(ep) / max(sum(m['cpu_s'] for m in on), 1e-9):.2%} of dbduel's CPU with it on)")
    print(f"scrape of a 1,000-client step: p50 {t['scrape_ms_p50']:.2f} ms, max "
          f"{t['scrape_ms_max']:.2f} ms over {t['scrapes']} scrapes ({t['body_bytes_max']:,} bytes;"
          " target < 50 ms)")
    print(f"raw results: {path}")


if __name__ == "__main__":
    main()
