#!/usr/bin/env python3
"""The runs of bench/footprint (start it through that script, which builds dbduel, installs
the peers and removes every sandbox afterwards).

What a client costs the machine it shares with the server, at 100 and 1,000 clients:

MariaDB: one sandbox holding the shoot-out's user_logs table (loaded by dbduel); on it the seed
study's own tool, `mysqlslap --concurrency=N --number-of-queries=Q` running the shoot-out's two
range queries (A), and dbduel's `queries` step with the same clients, queries and count (B).
PostgreSQL: one sandbox, `pgbench -i`, then `pgbench -c N -j CORES -S -M prepared -t Q` (A)
and dbduel's `queries` step running pgbench's SELECT with a random aid (B). A B A B …

For each run: the client's peak RSS and CPU (wait4's rusage: the whole process, start to
exit, connecting included), and its throughput as queries the *server* counted over the
client's wall time (the same yardstick for both; each tool's own QPS figure is kept in the raw
results). Targets: dbduel's throughput >= the peer's, its CPU per query <= the peer's, its
RSS <= 3x the peer's at 1,000 clients.
"""

import datetime
import json
import os

from vs_peers import (bench_args, dbduel_run, env_int, git_commit, host_cpu_s, log, must,
                      mysql_counters,
                      password_env, pg_bin, pg_commits, provision, run_client, secret_file,
                      tool_version, tree_cpu_s, write_results)

RANGE_QUERIES = [
    "SELECT COUNT(content) FROM user_logs WHERE id > 9950 AND id < 9999",
    "SELECT content FROM user_logs WHERE id > 9950 AND id < 9999",
]


def dbduel_queries(a, label, engine, target, password_file, clients, per_client, queries,
                   params="", options=""):
    """dbduel's `queries` step against a kept sandbox; the run's result with the step's JSON."""
    qs = ", ".join(json.dumps(q) for q in queries)
    return dbduel_run(a.dbduel, a.work, label, f"""[study]
name = "footprint"
description = "bench/footprint: dbduel's client against a peer on the same server"
[dataset]
generator = "user_logs"
rows = {a.rows}
[[contender]]
name = "dbduel"
engine = "{engine}"
target = "{target}"
password_file = "{password_file}"
{options}
[[step]]
name = "run"
kind = "queries"
clients = {clients}
per_client = {per_client}
queries = [{qs}]
{params}
""", peak_rss=True)


def figures(r, server_queries, server_cpu_s, own_qps):
    return {
        "server_queries": server_queries,
        "qps_wall": server_queries / max(r["wall_s"], 1e-9),
        "qps_own": own_qps,
        "peak_rss_bytes": r["peak_rss_bytes"],
        "client_cpu_s": r["cpu_s"],
        "client_cpu_us_per_query": r["cpu_s"] * 1e6 / max(server_queries, 1),
        "client_cpu_sys_share": r["cpu_sys_s"] / max(r["cpu_s"], 1e-9),
        "client_ctx_switches": r["ctx_switches_voluntary"] + r["ctx_switches_involuntary"],
        "server_cpu_s": server_cpu_s,
        "wall_s": r["wall_s"],
        "machine_busy_share": r["host_busy_s"] / max(r["host_cpu_s"], 1e-9),
    }


def mariadb_part(a, pairs):
    sb = provision(a.dbduel, a.work, "footprint-mariadb", f"""[study]
name = "footprint"
description = "bench/footprint: the shoot-out's table in one MariaDB sandbox"
[dataset]
generator = "user_logs"
rows = {a.rows}
seed = 42
table = "user_logs"
[[contender]]
name = "innodb"
engine = "mariadb"
options = {{ storage_engine = "innodb", buffer_pool_mb = 1024, server = {{ max_connections = 1200 }} }}
[[step]]
name = "load"
kind = "load"
""")
    port, pid, db = sb["port"], sb["pid"], "dbduel_footprint"
    target = f"mysql://root@127.0.0.1:{port}/{db}"
    env = password_env(sb)  # the sandbox's password in MYSQL_PWD, for mysqlslap and mariadb
    log(f"mariadb {sb.get('server_version')} on port {port}: user_logs, {a.rows} rows")

    def around(fn):
        c0, s0 = mysql_counters(port, env)["Com_select"], tree_cpu_s(pid)
        r = fn()
        c1, s1 = mysql_counters(port, env)["Com_select"], tree_cpu_s(pid)
        return r, c1 - c0, s1 - s0

    def peer(clients, label):
        # mysqlslap gives each client --number-of-queries / --concurrency queries (and runs
        # the list once when that is 0): N×100 makes 100 a client
        argv = ["mysqlslap", "-h127.0.0.1", f"-P{port}", "-uroot", f"--create-schema={db}",
                "--no-drop", f"--concurrency={clients}",
                f"--number-of-queries={clients * a.per_client}",
                "--delimiter=;", f"--query={';'.join(RANGE_QUERIES)}"]
        r, q, s = around(lambda: run_client(argv, os.path.join(a.work, f"{label}.log"),
                                            peak_rss=True, env=env))
        must(r, f"mysqlslap ({label})")
        return figures(r, q, s, None)

    def ours(clients, label):
        r, q, s = around(lambda: dbduel_queries(a, label, "mariadb", target, secret_file(sb), clients,
                                                a.per_client, RANGE_QUERIES))
        return figures(r, q, s, r["step"]["details"]["ops_per_s"])

    for clients in a.clients:
        pairs.append(pair("range queries", "mysqlslap", clients, a.per_client, a.rounds, peer, ours))


def postgres_part(a, pairs):
    sb = provision(a.dbduel, a.work, "footprint-postgres", """[study]
name = "pgbench"
description = "bench/footprint: one PostgreSQL sandbox for pgbench's tables"
[dataset]
generator = "sbtest"
tables = 1
rows = 1000
[[contender]]
name = "postgres"
engine = "postgres"
options = { shared_buffers_mb = 1024, stat_statements = false, server = { max_connections = 1200 } }
[[step]]
name = "load"
kind = "load"
""")
    port, pid, db = sb["port"], sb["pid"], "dbduel_pgbench"
    conn = ["-h", "127.0.0.1", "-p", str(port), "-U", "dbduel"]
    with open(secret_file(sb)) as f:
        env = {**os.environ, "PGPASSWORD": f.read().strip()}
    must(run_client([pg_bin("pgbench"), "-i", "-q", "-s", str(a.pg_scale), *conn, db],
                    os.path.join(a.work, "footprint-pgbench-init.log"), env=env), "pgbench -i")
    accounts = 100_000 * a.pg_scale
    target = f"postgres://dbduel@127.0.0.1:{port}/{db}"
    log(f"postgres {sb.get('server_version')} on port {port}: pgbench -i -s {a.pg_scale}")

    def around(fn):
        c0, s0 = pg_commits(port, db, env), tree_cpu_s(pid)
        r = fn()
        c1, s1 = pg_commits(port, db, env), tree_cpu_s(pid)
        return r, c1 - c0 - 1, s1 - s0  # the last read's own transaction

    def threads(clients):
        return min(clients, os.cpu_count() or 1)

    def peer(clients, label):
        argv = [pg_bin("pgbench"), "-S", "-M", "prepared", "-n", "-c", str(clients),
                "-j", str(threads(clients)), "-t", str(a.per_client),
                *conn, db]
        r, q, s = around(lambda: run_client(argv, os.path.join(a.work, f"{label}.log"),
                                            peak_rss=True, env=env))
        must(r, f"pgbench ({label})")
        return figures(r, q, s, None)

    def ours(clients, label):
        r, q, s = around(lambda: dbduel_queries(
            a, label, "postgres", target, secret_file(sb), clients, a.per_client,
            ["SELECT abalance FROM pgbench_accounts WHERE aid = $1"],
            # as many threads as pgbench's -j, unless FOOTPRINT_THREADS=clients (one each)
            params=f"params = [{{ min = 1, max = {accounts} }}]"
                   + ("" if a.threads == "clients" else f"\njobs = {threads(clients)}"),
            options="options = { stat_statements = false }"))
        return figures(r, q, s, r["step"]["details"]["ops_per_s"])

    for clients in a.clients:
        pairs.append(pair("select_only", "pgbench", clients, a.per_client, a.rounds, peer, ours))


def pair(workload, peer_name, clients, per_client, rounds, peer, ours):
    runs = {"peer": [], "dbduel": []}
    for i in range(rounds):
        for who, fn in (("peer", peer), ("dbduel", ours)):
            label = f"{peer_name}-c{clients}-r{i + 1}-{who}"
            m = fn(clients, label)
            runs[who].append(m)
            log(f"  {label}: {m['qps_wall']:,.0f} q/s, peak RSS {m['peak_rss_bytes'] / 2**20:.1f} MiB, "
                f"client {m['client_cpu_us_per_query']:.1f} µs/query")
            expected = clients * per_client
            if abs(m["server_queries"] - expected) > 0.02 * expected + 10:
                log(f"  warning: {label}: the server counted {m['server_queries']} queries, "
                    f"expected {expected}")

    def agg(ms):
        q = sum(m["server_queries"] for m in ms)
        return {
            "qps_wall": sum(m["qps_wall"] for m in ms) / len(ms),
            "peak_rss_bytes": max(m["peak_rss_bytes"] for m in ms),
            "client_cpu_us_per_query": sum(m["client_cpu_s"] for m in ms) * 1e6 / max(q, 1),
            "client_ctx_switches_per_query": sum(m["client_ctx_switches"] for m in ms) / max(q, 1),
            "client_cpu_sys_share": sum(m["client_cpu_sys_share"] for m in ms) / len(ms),
        }

    p, d = agg(runs["peer"]), agg(runs["dbduel"])
    return {"workload": workload, "peer": peer_name, "clients": clients, "rounds": rounds,
            "peer_summary": p, "dbduel_summary": d,
            "qps_ratio": d["qps_wall"] / max(p["qps_wall"], 1e-9),
            "cpu_ratio": d["client_cpu_us_per_query"] / max(p["client_cpu_us_per_query"], 1e-9),
            "rss_ratio": d["peak_rss_bytes"] / max(p["peak_rss_bytes"], 1),
            "runs": runs}


def print_table(pairs):
    head = (f"{'workload vs peer':<28} {'clients':>7} {'peer q/s':>9} {'dbduel q/s':>10}"
            f" {'ratio':>6} {'peer µs/q':>9} {'dbduel µs/q':>11} {'peer RSS':>9}"
            f" {'dbduel RSS':>10} {'RSS ratio':>9} {'switches/q peer/dbduel':>23}"
            f" {'kernel share peer/dbduel':>25}")
    print(head)
    print("-" * len(head))
    mib = lambda b: f"{b / 2**20:.1f}M"  # noqa: E731
    for p in pairs:
        a, b = p["peer_summary"], p["dbduel_summary"]
        print(f"{p['workload'] + ' vs ' + p['peer']:<28} {p['clients']:>7} {a['qps_wall']:>9,.0f}"
              f" {b['qps_wall']:>10,.0f} {p['qps_ratio']:>6.3f} {a['client_cpu_us_per_query']:>9.1f}"
              f" {b['client_cpu_us_per_query']:>11.1f} {mib(a['peak_rss_bytes']):>9}"
              f" {mib(b['peak_rss_bytes']):>10} {p['rss_ratio']:>9.2f}"
              f" {a['client_ctx_switches_per_query']:>11.2f} / {b['client_ctx_switches_per_query']:<9.2f}"
              f" {a['client_cpu_sys_share']:>12.0%} / {b['client_cpu_sys_share']:<10.0%}")
    print()
    for p in pairs:
        goals = [("throughput >= peer", p["qps_ratio"] >= 1.0),
                 ("CPU/query <= peer", p["cpu_ratio"] <= 1.0)]
        if p["clients"] >= 1000:
            goals.append(("RSS <= 3x peer", p["rss_ratio"] <= 3.0))
        missed = [g for g, ok in goals if not ok]
        print(f"{p['workload']} vs {p['peer']} at {p['clients']} clients: "
              + ("every target met" if not missed else "missed: " + ", ".join(missed)))


def main():
    a = bench_args(__doc__)
    a.clients = [int(c) for c in os.environ.get("FOOTPRINT_CLIENTS", "100 1000").split()]
    a.per_client = env_int("FOOTPRINT_QUERIES", 100)
    a.threads = os.environ.get("FOOTPRINT_THREADS", "peer")
    a.rounds = env_int("BENCH_ROUNDS", 2)
    a.rows = env_int("FOOTPRINT_ROWS", 100_000)
    a.pg_scale = env_int("BENCH_PG_SCALE", 10)
    parts = os.environ.get("BENCH_PARTS", "mariadb postgres").split()
    started = datetime.datetime.now(datetime.timezone.utc)
    log(f"footprint: clients {a.clients}, {a.per_client} queries each, {a.rounds} round(s) of "
        f"A B; {os.cpu_count()} cores")
    b0 = host_cpu_s()
    pairs = []
    if "mariadb" in parts:
        mariadb_part(a, pairs)
    if "postgres" in parts:
        postgres_part(a, pairs)
    b1 = host_cpu_s()
    out = {
        "schema_version": 1,
        "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "dbduel_commit": git_commit(),
        "settings": {"clients": a.clients, "queries_per_client": a.per_client,
                     "select_only_threads": a.threads, "rounds": a.rounds, "rows": a.rows, "pg_scale": a.pg_scale},
        "peers": {
            "mysqlslap": tool_version(["mysqlslap", "--version"]),
            "pgbench": tool_version([pg_bin("pgbench"), "--version"]),
        },
        "machine_busy_share": (b1[0] - b0[0]) / max(b1[1] - b0[1], 1e-9),
        "pairs": pairs,
    }
    path = write_results(a.results, "footprint", started, out)
    print()
    print_table(pairs)
    print(f"raw results: {path}")


if __name__ == "__main__":
    main()
