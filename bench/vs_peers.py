#!/usr/bin/env python3
"""The runs of bench/vs-peers (start it through that script, which builds dbduel, installs
the peers and removes every sandbox afterwards).

MariaDB, and MySQL 8.0 (from the server cache): one sandbox each, one sbtest dataset loaded by
dbduel; on it sysbench 1.0's oltp_point_select and oltp_read_only (A) and dbduel's `oltp` step
with the same workload against the sandbox as its target (B), alternating A B A B at each
thread count, same duration; both log in as the sandbox's root with its secret. PostgreSQL: one sandbox, `pgbench -i`,
then `pgbench -S -M prepared` (A) and dbduel's `queries` step running pgbench's SELECT with a
random aid (B), the same way. TPC-C: one MariaDB sandbox holding two copies of the same
warehouses, one loaded by `go-tpc tpcc prepare`, one by dbduel; go-tpc's `tpcc run` (A) and
dbduel's `tpcc` step (B), alternating, same terminals and duration; the rate is tpmC.

Each client's CPU is what the kernel accounted to that process and its threads (wait4's
rusage: user + system, start to exit, connecting and preparing included); its queries and QPS
are what the client itself reports, checked against the server's own counters. The server's
CPU over each run is read from /proc too, and so is the rest of the machine's, so a run
disturbed by something else shows it.
"""

import argparse
import datetime
import glob
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

CLK = os.sysconf("SC_CLK_TCK")
# The sbtest dataset: sysbench's defaults for a quick run, as the oltp study's quick scale.
TABLES = 4
ROWS = 100_000


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- /proc accounting


def _stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    return text[text.rindex(")") + 2 :].split()


def tree_cpu_s(root):
    """CPU seconds of process `root` and its descendants, plus the children it has already
    reaped (PostgreSQL's backends end with their connections)."""
    parent, own = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            f = _stat_fields(int(d))
        except (OSError, ValueError):
            continue
        parent[int(d)] = int(f[1])
        own[int(d)] = int(f[11]) + int(f[12])
    if root not in own:
        return None
    kids = {}
    for p, pp in parent.items():
        kids.setdefault(pp, []).append(p)
    total, stack = 0, [root]
    while stack:
        p = stack.pop()
        total += own.get(p, 0)
        stack.extend(kids.get(p, []))
    f = _stat_fields(root)
    total += int(f[13]) + int(f[14])
    return total / CLK


def host_cpu_s():
    """(busy, all) CPU seconds of the whole machine so far."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]  # idle + iowait
    total = sum(v[:8])  # guest time is already inside user
    return (total - idle) / CLK, total / CLK


def tcp_segments_sent():
    """TCP segments the host has sent (/proc/net/snmp's Tcp OutSegs): over loopback, both the
    client's and the server's, queries, answers and bare ACKs alike."""
    with open("/proc/net/snmp") as f:
        rows = [l.split() for l in f if l.startswith("Tcp:")]
    return int(rows[1][rows[0].index("OutSegs")])


def run_client(argv, log_path, peak_rss=False, env=None, cwd=None, interrupt_after_s=None):
    """Run one client to completion (or, with `interrupt_after_s`, until it ends after a
    SIGINT sent that many seconds after its start: a client whose run stops only so);
    its exit code, wall time, CPU (user, system) and output,
    and with `peak_rss` its peak resident memory. That is taken by GNU time (`%M`), not from
    our own wait4: a forked child keeps the forking process's peak RSS across exec, so wait4
    would report at least this Python process's size for any client; time's own is ~2 MB."""
    h0, seg0 = host_cpu_s(), tcp_segments_sent()
    t0 = time.monotonic()
    rss_path = log_path + ".maxrss"
    if peak_rss:
        argv = ["/usr/bin/time", "-f", "%M", "-o", rss_path, *argv]
    with open(log_path, "w") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        timer = None
        if interrupt_after_s is not None:
            timer = threading.Timer(interrupt_after_s, p.send_signal, (signal.SIGINT,))
            timer.start()
        _, status, ru = os.wait4(p.pid, 0)
        if timer:
            timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    h1, seg1 = host_cpu_s(), tcp_segments_sent()
    with open(log_path) as f:
        text = f.read()
    rss = None
    if peak_rss:
        with open(rss_path) as f:
            rss = int(f.read().split()[-1]) * 1024  # KiB
    return {
        "argv": argv,
        "rc": p.returncode,
        "wall_s": wall,
        "cpu_user_s": ru.ru_utime,
        "cpu_sys_s": ru.ru_stime,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        # times the client's threads gave up the CPU waiting (a blocking read), and were
        # taken off it
        "ctx_switches_voluntary": ru.ru_nvcsw,
        "ctx_switches_involuntary": ru.ru_nivcsw,
        "peak_rss_bytes": rss,
        "host_busy_s": h1[0] - h0[0],
        "host_cpu_s": h1[1] - h0[1],
        "tcp_segments": seg1 - seg0,
        "output": text,
    }


def must(res, what):
    if res["rc"] != 0:
        tail = "\n".join(res["output"].splitlines()[-25:])
        raise SystemExit(f"error: {what} failed (exit {res['rc']}):\n{tail}")


def tool_version(argv):
    """What a peer says of its own version."""
    return subprocess.run(argv, capture_output=True, text=True).stdout.strip()


def git_commit():
    """The checkout's commit, `-dirty` when tracked files changed."""
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return commit + ("-dirty" if dirty else "")


def write_results(results_dir, name, started, out):
    """Write `out` to RESULTS/NAME-<UTC time>.json (to a temporary name, then renamed)."""
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, f"{name}-{started.strftime('%Y%m%dT%H%M%SZ')}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=1)
    os.replace(path + ".tmp", path)
    return path


# ---------------------------------------------------------------- sandboxes


def provision(dbduel, work, name, study_text):
    """Run a load-only study with --keep; return the kept sandbox's manifest. Kept sandboxes
    all live under WORK/sandboxes, where bench/vs-peers removes them on exit."""
    root = os.path.join(work, "sandboxes")
    before = set(glob.glob(os.path.join(root, "*")))
    path = os.path.join(work, f"{name}.toml")
    with open(path, "w") as f:
        f.write(study_text)
    res = run_client([dbduel, "run", path, "-q", "--keep", "--out", root],
                     os.path.join(work, f"{name}-provision.log"))
    found = [p for d in set(glob.glob(os.path.join(root, "*"))) - before
             for p in glob.glob(os.path.join(d, "work", "*", "sandbox", "sandbox.json"))]
    manifests = []
    for p in found:
        with open(p) as f:
            m = json.load(f)
        m["dir"] = os.path.dirname(p)
        manifests.append(m)
        if m.get("pid"):
            try:
                start = _stat_fields(m["pid"])[19]
            except OSError:
                start = "gone"
            with open(os.path.join(work, "servers"), "a") as f:
                f.write(f"{m['pid']} {start} {m.get('private_dir') or '-'}\n")
    must(res, f"provisioning the {name} sandbox")
    if len(manifests) != 1 or not manifests[0].get("pid"):
        raise SystemExit(f"error: expected one running kept sandbox for {name}, found {found}")
    return manifests[0]


def secret_file(sb):
    """The file holding a kept sandbox's password (its root account's, on every family)."""
    return os.path.join(sb["dir"], "secret")


def password_env(sb):
    """The environment for a MySQL-protocol client of sandbox `sb`: its password in MYSQL_PWD,
    which libmariadb (mariadb, sysbench) reads, so it is on no command line."""
    with open(secret_file(sb)) as f:
        return {**os.environ, "MYSQL_PWD": f.read().strip()}


# ---------------------------------------------------------------- dbduel runs


def dbduel_run(dbduel, work, label, study_text, peak_rss=False, extra=()):
    """Run a study whose contender is `dbduel` and step `run` (with `extra` arguments to
    `dbduel run`); the run with the step's JSON."""
    d = os.path.join(work, "runs", label)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "study.toml")
    with open(path, "w") as f:
        f.write(study_text)
    res = run_client([dbduel, "run", path, "-q", "--out", d, *extra],
                     os.path.join(d, "client.log"), peak_rss=peak_rss)
    must(res, f"dbduel ({label})")
    found = glob.glob(os.path.join(d, "*", "dbduel", "run.json"))
    if len(found) != 1:
        raise SystemExit(f"error: no step result for {label} under {d}")
    with open(found[0]) as f:
        res["step"] = json.load(f)
    return res


def dbduel_study(target, engine, step, options="", password_file=None,
                 dataset=f"generator = \"sbtest\"\ntables = {TABLES}\nrows = {ROWS}"):
    password = f'password_file = "{password_file}"' if password_file else ""
    return f"""[study]
name = "vs-peers"
description = "bench/vs-peers: dbduel's client against a peer on the same server"
[dataset]
{dataset}
[[contender]]
name = "dbduel"
engine = "{engine}"
target = "{target}"
# the sandbox's own superuser, which the peer logs in as too
wide_account = true
{password}
{options}
[[step]]
name = "run"
{step}
"""


# ---------------------------------------------------------------- MariaDB: sysbench


def mysql_query(port, env, sql):
    """Rows of `sql` on the sandbox at `port` (root, its password in `env`), tab-separated."""
    out = subprocess.run(
        ["mariadb", "-h127.0.0.1", f"-P{port}", "-uroot", "-N", "-B", "-e", sql],
        capture_output=True, text=True, env=env,
    )
    if out.returncode != 0:
        raise SystemExit(f"error: mariadb -e {sql!r} on port {port}: {out.stderr.strip()}")
    return [l.split("\t") for l in out.stdout.splitlines() if l.strip()]


def mysql_counters(port, env):
    """The server's global status counters (the numeric ones)."""
    rows = mysql_query(port, env, "SHOW GLOBAL STATUS")
    return {k: int(v) for k, v in rows if v.lstrip("-").isdigit()}


# The server's counters that grow with the work a client's statements cause, beside its CPU:
# rows read and written through the storage engine's handler, the query plans' kinds, sorts,
# temporary tables, and what went back. The same counts a query from both clients show that
# they asked the server for the same work, which the server's CPU alone cannot: it moves by up
# to ±15 % between rounds of one client here, with the host's speed.
MYSQL_WORK = ("Handler_", "Select_", "Sort_", "Created_tmp_", "Innodb_rows_", "Bytes_sent")
# On PostgreSQL the user tables' scans and rows (pg_stat_user_tables, summed), which neither
# autovacuum nor a new backend's catalog reads move, and the database's commits. (Not the
# share of updates that stay on their page, n_tup_hot_upd: that follows the pages' free space
# as the run goes, not what the client asked.)
PG_WORK = ("seq_scan", "seq_tup_read", "idx_scan", "idx_tup_fetch", "n_tup_ins", "n_tup_upd",
           "n_tup_del", "xact_commit")


def work_done(c0, c1, names):
    """The counters of `names` (or starting with one) that moved between c0 and c1: the deltas."""
    return {k: c1[k] - c0.get(k, 0) for k in c1
            if k.startswith(names) and c1[k] != c0.get(k, 0)}


def parse_sysbench(text):
    def grab(pat):
        m = re.search(pat, text)
        if not m:
            raise SystemExit(f"error: sysbench output lacks {pat!r}:\n{text[-2000:]}")
        return m
    q = grab(r"queries:\s+(\d+)\s+\(([\d.]+) per sec")
    t = grab(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec")
    return {
        "queries": int(q.group(1)),
        "qps": float(q.group(2)),
        "events": int(t.group(1)),
        "tps": float(t.group(2)),
        "errors": int(grab(r"ignored errors:\s+(\d+)").group(1)),
        "seconds": float(grab(r"total time:\s+([\d.]+)s").group(1)),
        "p95_ms": float(grab(r"95th percentile:\s+([\d.]+)").group(1)),
    }


def sysbench_tls_option():
    """sysbench's option that requires TLS of the server: 1.0 takes `--mysql-ssl=on`, 1.1
    `--mysql-ssl=REQUIRED` (the mysql client's level)."""
    text = subprocess.run(["sysbench", "oltp_point_select", "help"],
                          capture_output=True, text=True).stdout
    return "--mysql-ssl=REQUIRED" if "REQUIRED" in text else "--mysql-ssl=on"


def sysbench_tls_dir(work, sb):
    """A directory for sysbench 1.0 to run in over TLS: its `--mysql-ssl=on` hands libmariadb
    the files client-key.pem, client-cert.pem and cacert.pem of the current directory, and
    the server checks a client certificate against its CA. The sandbox's CA, and its own
    certificate and key (signed by that CA) as the client's: this bench's one machine."""
    d = os.path.join(work, "sysbench-tls")
    os.makedirs(d, exist_ok=True)
    server_dir = sb.get("private_dir") or sb["dir"]
    for theirs, ours in (("tls-ca.pem", "cacert.pem"), ("tls-cert.pem", "client-cert.pem"),
                         ("tls-key.pem", "client-key.pem")):
        with open(os.path.join(server_dir, theirs)) as f, \
                open(os.path.join(d, ours), "w") as out:
            out.write(f.read())
        os.chmod(os.path.join(d, ours), 0o600)
    return d


def sysbench_argv(workload, port, db, threads, seconds, tls=False):
    return [
        "sysbench", f"oltp_{workload}", "--db-driver=mysql",
        "--mysql-host=127.0.0.1", f"--mysql-port={port}", "--mysql-user=root",
        f"--mysql-db={db}", f"--tables={TABLES}", f"--table-size={ROWS}",
        "--rand-type=special", f"--threads={threads}", f"--time={seconds}",
        "--events=0", "--percentile=95", *([sysbench_tls_option()] if tls else []), "run",
    ]


# The contender each sysbench pair's sandbox is made from: the engine, its version line and
# whether it serves TLS (its options: InnoDB, a 1 GiB buffer pool, room for every client).
SYSBENCH_SERVERS = {
    "mariadb": ("mariadb", "", False),
    # MySQL 8.0.15 from the server cache (scripts/install-servers), as `dbduel sandbox up
    # mysql --version 8.0` starts it.
    "mysql": ("mysql", 'version = "8.0"', False),
    # What TLS costs each client: the same MariaDB serving TLS (`tls = true`), sysbench
    # requiring it of the server, dbduel's target saying ssl-mode=REQUIRED.
    "mariadb-tls": ("mariadb", "", True),
}


def sbtest_sandbox(a, part):
    """A kept sandbox of `part` (mariadb or mysql) holding one sbtest dataset loaded by dbduel:
    its manifest."""
    engine, version, tls = SYSBENCH_SERVERS[part]
    tls = ", tls = true" if tls else ""
    return provision(a.dbduel, a.work, part, f"""[study]
name = "oltp"
description = "bench/vs-peers: one sbtest dataset in one {part} sandbox"
[dataset]
generator = "sbtest"
tables = {TABLES}
rows = {ROWS}
seed = 42
[[contender]]
name = "innodb"
engine = "{engine}"
{version}
options = {{ storage_engine = "innodb", buffer_pool_mb = 1024, server = {{ max_connections = 1000 }}{tls} }}
[[step]]
name = "load"
kind = "load"
""")


def sysbench_part(a, out, part):
    """sysbench (A) and dbduel's oltp step (B) on one sandbox of `part` (mariadb or mysql)
    holding one sbtest dataset loaded by dbduel; both log in as the sandbox's root with the
    password in its secret file (sysbench through MYSQL_PWD, dbduel through password_file)."""
    engine, _, tls = SYSBENCH_SERVERS[part]
    sb = sbtest_sandbox(a, part)
    port, pid, db = sb["port"], sb["pid"], "dbduel_oltp"
    env = password_env(sb)
    # The account both clients log in with: on MySQL 8.0 anything but mysql_native_password
    # (8.0's default is caching_sha2_password) would send dbduel's sessions from its lean
    # wire client to the slower `mysql` crate, and this pair would measure that instead.
    [[plugin]] = mysql_query(port, env, "SELECT plugin FROM mysql.user "
                             "WHERE User = 'root' AND Host = '127.0.0.1'")
    if plugin != "mysql_native_password":
        raise SystemExit(f"error: the {part} sandbox's root@127.0.0.1 authenticates with "
                         f"{plugin}, which dbduel's lean wire client does not speak")
    out[part] = {"server_version": sb.get("server_version"), "port": port, "auth_plugin": plugin,
                 "tables": TABLES, "rows_per_table": ROWS, "pairs": []}
    log(f"{part} {sb.get('server_version')} on port {port}: {TABLES} sbtest tables × {ROWS} rows; "
        f"root@127.0.0.1 authenticates with {plugin}")
    target = f"mysql://root@127.0.0.1:{port}/{db}" + ("?ssl-mode=REQUIRED" if tls else "")
    cwd = sysbench_tls_dir(a.work, sb) if tls else None
    if a.warmup > 0:
        log(f"warm-up: sysbench oltp_read_only, {a.warmup} s (not measured)")
        must(run_client(sysbench_argv("read_only", port, db, 8, a.warmup, tls),
                        os.path.join(a.work, f"warmup-{part}.log"), env=env, cwd=cwd),
             "warm-up")

    def over_tls(c0, c1, threads, label):
        # The server's own count: every client's connection came under TLS.
        if tls and c1.get("Ssl_accepts", 0) - c0.get("Ssl_accepts", 0) < threads:
            raise SystemExit(f"error: {label}: the server accepted fewer TLS connections "
                             f"than the {threads} clients")

    def peer(workload, threads, label):
        c0, s0 = mysql_counters(port, env), tree_cpu_s(pid)
        r = run_client(sysbench_argv(workload, port, db, threads, a.duration, tls),
                       os.path.join(a.work, f"{label}.log"), env=env, cwd=cwd)
        must(r, f"sysbench ({label})")
        time.sleep(0.3)
        s1, c1 = tree_cpu_s(pid), mysql_counters(port, env)
        over_tls(c0, c1, threads, label)
        f = parse_sysbench(r["output"])
        return measured(r, f["qps"], f["queries"], f["errors"], f["p95_ms"] * 1000,
                        s1 - s0, server_queries(c0, c1), f, work_done(c0, c1, MYSQL_WORK))

    def ours(workload, threads, label):
        # sysbench has a thread a client; BENCH_JOBS serves dbduel's clients from fewer
        # (pgbench's -j), each still one connection with one event in flight.
        jobs = f"\njobs = {a.jobs}" if a.jobs and a.jobs < threads else ""
        step = f"""kind = "oltp"
workload = "{workload}"
threads = {threads}{jobs}
duration_s = {a.duration}
final_fraction = 1.0
distribution = "special\""""
        c0, s0 = mysql_counters(port, env), tree_cpu_s(pid)
        r = dbduel_run(a.dbduel, a.work, label,
                       dbduel_study(target, engine, step, password_file=secret_file(sb)))
        time.sleep(0.3)
        s1, c1 = tree_cpu_s(pid), mysql_counters(port, env)
        over_tls(c0, c1, threads, label)
        lv = r["step"]["details"]["levels"][0]
        queries = round(lv["qps"] * lv["measured_s"])
        return measured(r, lv["qps"], queries, lv["errors"], (lv["latency_us"] or {}).get("p95"),
                        s1 - s0, server_queries(c0, c1),
                        {k: lv[k] for k in ("tps", "events", "measured_s", "dbduel_cpu_us_per_event")},
                        work_done(c0, c1, MYSQL_WORK))

    for workload in ("point_select",) if tls else ("point_select", "read_only"):
        for threads in a.threads:
            p = pair(part, workload, "sysbench", threads, a.rounds, peer, ours)
            if tls:
                p["workload"] = f"{workload} over TLS"
            out[part]["pairs"].append(p)


def server_queries(c0, c1):
    """Statements the server executed: SELECTs, BEGINs and COMMITs, prepared or not (each
    counts once whichever way it was sent; Com_stmt_execute would count sysbench's prepared
    BEGIN twice)."""
    return sum(c1[k] - c0[k] for k in ("Com_select", "Com_begin", "Com_commit"))


# ---------------------------------------------------------------- PostgreSQL: pgbench


def pg_bin(name):
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                   key=lambda p: int(p.split("/")[4]))
    return found[-1] if found else name


def pg_counters(port, db, env):
    """The database's PG_WORK counters, as the server last flushed them."""
    tables = ", ".join(f"coalesce(sum({k}), 0)" for k in PG_WORK[:-1])
    out = subprocess.run(
        [pg_bin("psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "dbduel", "-d", db, "-At",
         "-F", "\t", "-c", f"SELECT {tables}, (SELECT xact_commit FROM pg_stat_database "
         "WHERE datname = current_database()) FROM pg_stat_user_tables"],
        capture_output=True, text=True, check=True, env=env,
    ).stdout
    return dict(zip(PG_WORK, map(int, out.strip().split("\t"))))


def pg_commits(port, db, env):
    return pg_counters(port, db, env)["xact_commit"]


def pg_committed(c0, c1):
    """The transactions a run committed: the counters' difference less the reading of c0."""
    return c1["xact_commit"] - c0["xact_commit"] - 1


def parse_pgbench(text):
    n = re.search(r"number of transactions actually processed:\s+(\d+)", text)
    t = re.search(r"tps = ([\d.]+) \(without initial connection time\)", text)
    lat = re.search(r"latency average = ([\d.]+) ms", text)
    fail = re.search(r"number of failed transactions:\s+(\d+)", text)
    if not (n and t):
        raise SystemExit(f"error: unexpected pgbench output:\n{text[-2000:]}")
    return {"queries": int(n.group(1)), "qps": float(t.group(1)),
            "errors": int(fail.group(1)) if fail else 0,
            "latency_avg_ms": float(lat.group(1)) if lat else None}


def postgres_part(a, out, part="postgres"):
    """pgbench (A) and dbduel (B) on one PostgreSQL sandbox; `postgres-tls`: the sandbox
    serves TLS, pgbench asks for it with sslmode=require and dbduel's target says the same."""
    tls = part == "postgres-tls"
    sb = provision(a.dbduel, a.work, part, f"""[study]
name = "pgbench"
description = "bench/vs-peers: one PostgreSQL sandbox for pgbench's tables"
[dataset]
generator = "sbtest"
tables = 1
rows = 1000
[[contender]]
name = "postgres"
engine = "postgres"
options = {{ shared_buffers_mb = 1024, stat_statements = false, server = {{ max_connections = 1000 }}{", tls = true" if tls else ""} }}
[[step]]
name = "load"
kind = "load"
""")
    port, pid, db = sb["port"], sb["pid"], "dbduel_pgbench"
    conn = ["-h", "127.0.0.1", "-p", str(port), "-U", "dbduel"]
    with open(secret_file(sb)) as f:
        env = {**os.environ, "PGPASSWORD": f.read().strip(),
               "PGSSLMODE": "require" if tls else "disable"}
    log(f"postgres {sb.get('server_version')} on port {port}: pgbench -i -s {a.pg_scale}")
    must(run_client([pg_bin("pgbench"), "-i", "-q", "-s", str(a.pg_scale), *conn, db],
                    os.path.join(a.work, "pgbench-init.log"), env=env), "pgbench -i")
    accounts = 100_000 * a.pg_scale
    out[part] = {"server_version": sb.get("server_version"), "port": port,
                 "scale": a.pg_scale, "accounts": accounts, "pairs": []}
    target = f"postgres://dbduel@127.0.0.1:{port}/{db}?sslmode={'require' if tls else 'disable'}"

    def jobs(clients):
        # pgbench's -j and dbduel's `threads`, the same for both: one per client unless
        # BENCH_PG_JOBS caps them (both clients then wait on their sockets with poll/epoll).
        return clients if a.pg_jobs is None else min(a.pg_jobs, clients)

    def pgbench_argv(threads, seconds):
        return [pg_bin("pgbench"), "-S", "-M", "prepared", "-n", "-c", str(threads),
                "-j", str(jobs(threads)), "-T", str(seconds), *conn, db]

    if a.warmup > 0:
        log(f"warm-up: pgbench -S, {a.warmup} s (not measured)")
        must(run_client(pgbench_argv(8, a.warmup), os.path.join(a.work, "warmup-postgres.log"),
                        env=env), "warm-up")

    def peer(_workload, threads, label):
        c0, s0 = pg_counters(port, db, env), tree_cpu_s(pid)
        r = run_client(pgbench_argv(threads, a.duration), os.path.join(a.work, f"{label}.log"),
                       env=env)
        must(r, f"pgbench ({label})")
        time.sleep(0.5)
        s1, c1 = tree_cpu_s(pid), pg_counters(port, db, env)
        f = parse_pgbench(r["output"])
        return measured(r, f["qps"], f["queries"], f["errors"], None, s1 - s0,
                        pg_committed(c0, c1), f, work_done(c0, c1, PG_WORK))

    def ours(_workload, threads, label):
        shared = "" if jobs(threads) == threads else f"\njobs = {jobs(threads)}"
        step = f"""kind = "queries"
clients = {threads}{shared}
duration_s = {a.duration}
queries = ["SELECT abalance FROM pgbench_accounts WHERE aid = $1"]
params = [{{ min = 1, max = {accounts} }}]"""
        c0, s0 = pg_counters(port, db, env), tree_cpu_s(pid)
        r = dbduel_run(a.dbduel, a.work, label,
                       dbduel_study(target, "postgres", step, "options = { stat_statements = false }",
                                    password_file=secret_file(sb)))
        time.sleep(0.5)
        s1, c1 = tree_cpu_s(pid), pg_counters(port, db, env)
        d = r["step"]["details"]
        errors = sum(e["count"] for e in d["errors"])
        return measured(r, d["ops_per_s"], d["ops"], errors, (d["latency_us"] or {}).get("p95"),
                        s1 - s0, pg_committed(c0, c1),
                        {k: d[k] for k in ("measured_s", "dbduel_cpu_us_per_op")},
                        work_done(c0, c1, PG_WORK))

    for threads in a.threads:
        p = pair(part, "select_only", "pgbench", threads, a.rounds, peer, ours)
        if tls:
            p["workload"] = "select_only over TLS"
        out[part]["pairs"].append(p)
    if not tls:
        script_pairs(a, out, sb, db, conn, env, target)


# The custom scripts of the script pairs: one file each, run unchanged by `pgbench -f` and by
# dbduel's `script` step. TPC-B-like is pgbench's built-in script as its manual prints it (with
# COMMIT for END, which both clients send alike); the read-only one draws its key with \set.
# Each with the transactions the server commits a run of it (its two SELECTs autocommit).
PG_SCRIPTS = {
    "tpcb_like": (1, """\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
COMMIT;
"""),
    "read_only_set": (2, """\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT bbalance FROM pgbench_branches WHERE bid = :bid;
"""),
}


def script_pairs(a, out, sb, db, conn, env, target):
    """pgbench -f (A) and dbduel's `script` step (B) running the same custom script file on
    the PostgreSQL sandbox, closed loop, same clients; the rate is transactions (script runs)
    a second, checked against the server's committed transactions."""
    port, pid = sb["port"], sb["pid"]
    for name, (commits, text) in PG_SCRIPTS.items():
        path = os.path.join(a.work, f"{name}.sql")
        with open(path, "w") as f:
            f.write(text)

        def peer(_workload, threads, label, path=path, commits=commits):
            c0, s0 = pg_counters(port, db, env), tree_cpu_s(pid)
            r = run_client([pg_bin("pgbench"), "-f", path, "-M", "prepared", "-n",
                            "-s", str(a.pg_scale), "-c", str(threads), "-j", str(threads),
                            "-T", str(a.duration), *conn, db],
                           os.path.join(a.work, f"{label}.log"), env=env)
            must(r, f"pgbench -f ({label})")
            time.sleep(0.5)
            s1, c1 = tree_cpu_s(pid), pg_counters(port, db, env)
            f = parse_pgbench(r["output"])
            return measured(r, f["qps"], f["queries"], f["errors"], None, s1 - s0,
                            pg_committed(c0, c1) / commits, f, work_done(c0, c1, PG_WORK))

        def ours(_workload, threads, label, path=path, commits=commits):
            step = f"""kind = "script"
scripts = ["{path}"]
clients = {threads}
duration_s = {a.duration}
scale = {a.pg_scale}"""
            c0, s0 = pg_counters(port, db, env), tree_cpu_s(pid)
            r = dbduel_run(a.dbduel, a.work, label,
                           dbduel_study(target, "postgres", step,
                                        "options = { stat_statements = false }",
                                        password_file=secret_file(sb)))
            time.sleep(0.5)
            s1, c1 = tree_cpu_s(pid), pg_counters(port, db, env)
            lv = r["step"]["details"]["levels"][0]
            errors = lv["errors"] if isinstance(lv["errors"], int) else \
                sum(e["count"] for e in lv["errors"])
            return measured(r, lv["tps"], lv["script_runs"], errors,
                            (lv["latency_us"] or {}).get("p95"), s1 - s0,
                            pg_committed(c0, c1) / commits,
                            {k: lv[k] for k in ("tps", "script_runs", "measured_s",
                                                "dbduel_cpu_us_per_script_run")},
                            work_done(c0, c1, PG_WORK))

        for threads in a.threads:
            out["postgres"]["pairs"].append(
                pair("postgres", f"script {name}", "pgbench -f", threads, a.rounds, peer, ours))


# ---------------------------------------------------------------- MariaDB: go-tpc


# The go-tpc scripts/install-go-tpc builds (its binary says no version of its own).
GO_TPC_VERSION = "v1.0.12"


def go_tpc_bin():
    for p in ("/usr/local/bin/go-tpc", f"/usr/local/lib/dbduel/go-tpc-{GO_TPC_VERSION}/go-tpc"):
        if os.access(p, os.X_OK):
            return p
    raise SystemExit("error: go-tpc is not installed: run scripts/install-go-tpc")


def parse_go_tpc(text):
    """go-tpc's closing summary: tpmC, tpmTotal, each type's count and the failed ones."""
    t = re.findall(r"tpmC: ([\d.]+), tpmTotal: ([\d.]+)", text)
    if not t:
        raise SystemExit(f"error: go-tpc's output lacks its tpmC line:\n{text[-2000:]}")
    summary = re.findall(r"\[Summary\] (\w+) - Takes\(s\): ([\d.]+), Count: (\d+)", text)
    counts = {name: (int(n), float(secs)) for name, secs, n in summary}
    ok = {k: v for k, v in counts.items() if not k.endswith("_ERR")}
    return {
        "tpmc": float(t[-1][0]),
        "tpm_total": float(t[-1][1]),
        "transactions": sum(n for n, _ in ok.values()),
        "seconds": max((secs for _, secs in ok.values()), default=0.0),
        "errors": sum(n for k, (n, _) in counts.items() if k.endswith("_ERR")),
        "counts": {k: n for k, (n, _) in counts.items()},
    }


def tpcc_part(a, out):
    """go-tpc (A) and dbduel's tpcc step (B) on one MariaDB sandbox, each on its own copy of
    the same warehouses: go-tpc's loaded by `go-tpc tpcc prepare`, dbduel's by its load step."""
    gotpc = go_tpc_bin()
    w = a.tpcc_warehouses
    sb = provision(a.dbduel, a.work, "tpcc", f"""[study]
name = "tpcc"
description = "bench/vs-peers: dbduel's TPC-C warehouses in one MariaDB sandbox"
[dataset]
generator = "tpcc"
warehouses = {w}
seed = 42
[[contender]]
name = "innodb"
engine = "mariadb"
options = {{ storage_engine = "innodb", buffer_pool_mb = 1024, server = {{ max_connections = 1000 }} }}
[[step]]
name = "load"
kind = "load"
""")
    port, pid, db = sb["port"], sb["pid"], "dbduel_tpcc"
    [load_json] = glob.glob(os.path.join(a.work, "sandboxes", "tpcc-*", "innodb", "load.json"))
    [manifest] = glob.glob(os.path.join(a.work, "sandboxes", "tpcc-*", "manifest.json"))
    with open(load_json) as f:
        load = json.load(f)["summary"]["elapsed_s"]
    with open(manifest) as f:
        generate = json.load(f)["dataset"]["generate_s"]
    env = password_env(sb)
    # go-tpc reads no password variable: it gets the throwaway sandbox's on its command line.
    conn = ["-H", "127.0.0.1", "-P", str(port), "-U", "root", "-p", env["MYSQL_PWD"],
            "-D", "gotpc"]
    log(f"tpcc: mariadb {sb.get('server_version')} on port {port}: {w} warehouses; "
        f"dbduel generated them in {generate:.1f} s and loaded them in {load:.1f} s")
    prep = run_client([gotpc, "tpcc", "prepare", *conn, "--warehouses", str(w),
                       "-T", str(os.cpu_count()), "--no-check"],
                      os.path.join(a.work, "go-tpc-prepare.log"))
    must(prep, "go-tpc tpcc prepare")
    log(f"tpcc: go-tpc prepared them in {prep['wall_s']:.1f} s (--no-check, "
        f"{os.cpu_count()} threads)")
    out["tpcc"] = {
        "server_version": sb.get("server_version"), "port": port, "warehouses": w,
        "go_tpc": GO_TPC_VERSION,
        "load": {"go_tpc_prepare_s": prep["wall_s"], "go_tpc_prepare_cpu_s": prep["cpu_s"],
                 "dbduel_generate_s": generate, "dbduel_load_s": load},
        "pairs": [],
    }
    target = f"mysql://root@127.0.0.1:{port}/{db}"

    def commits():
        c = mysql_counters(port, env)
        return c.get("Com_commit", 0) + c.get("Com_rollback", 0)

    def peer(_workload, threads, label):
        c0, s0 = commits(), tree_cpu_s(pid)
        r = run_client([gotpc, "tpcc", "run", *conn, "--warehouses", str(w), "-T", str(threads),
                        "--time", f"{a.duration}s"], os.path.join(a.work, f"{label}.log"))
        must(r, f"go-tpc ({label})")
        time.sleep(0.3)
        s1, c1 = tree_cpu_s(pid), commits()
        f = parse_go_tpc(r["output"])
        return measured(r, f["tpmc"], f["transactions"], f["errors"], None, s1 - s0, c1 - c0, f)

    def ours(_workload, threads, label):
        step = f"""kind = "tpcc"
threads = {threads}
duration_s = {a.duration}
final_fraction = 1.0"""
        study = dbduel_study(target, "mariadb", step, password_file=secret_file(sb)).replace(
            'generator = "sbtest"', f'generator = "tpcc"\nwarehouses = {w}\nseed = 42'
        ).replace(f"tables = {TABLES}\nrows = {ROWS}\n", "")
        c0, s0 = commits(), tree_cpu_s(pid)
        r = dbduel_run(a.dbduel, a.work, label, study)
        time.sleep(0.3)
        s1, c1 = tree_cpu_s(pid), commits()
        lv = r["step"]["details"]["levels"][0]
        return measured(r, lv["tpmc"], lv["transactions"], lv["errors"],
                        (lv["types"][0]["latency_us"] or {}).get("p95"), s1 - s0, c1 - c0,
                        {k: lv[k] for k in ("tpmc", "tpm_total", "transactions", "measured_s",
                                            "dbduel_cpu_us_per_txn")})

    for threads in a.tpcc_threads:
        out["tpcc"]["pairs"].append(pair("tpcc", "tpcc", "go-tpc", threads, a.rounds, peer, ours))


# ---------------------------------------------------------------- TPC-H: go-tpc

# The servers of the TPC-H pair: the contender each sandbox is made from, and how go-tpc
# reaches it (its driver, the account dbduel's sandbox gives a client). Memory enough to
# hold SF 1's tables with their indexes, so that every timed query runs on cached pages.
TPCH_SERVERS = {
    "mariadb": {
        "options": 'options = { storage_engine = "innodb", buffer_pool_mb = 4096 }',
        "user": "root", "scheme": "mysql", "go_tpc": [],
    },
    "postgres": {
        "options": "options = { shared_buffers_mb = 2048, stat_statements = false }",
        "user": "dbduel", "scheme": "postgres",
        "go_tpc": ["-d", "postgres", "--conn-params", "sslmode=disable"],
    },
}
# dbduel's TPC-H tables (the query pair runs on them) and go-tpc's (the load pair's).
TPCH_DB = "dbduel_tpch"
GO_TPC_TPCH_DB = "gotpch"
# go-tpc's histograms clamp a query's time to at least 100 ms (pkg/measurement: MinLatency),
# and it prints seconds with two decimals: a query this fast or faster has no go-tpc figure.
GO_TPC_FLOOR_S = 0.10


def tpch_sandbox(a, family):
    """A kept sandbox of `family` with dbduel's (empty, marked) database for the TPC-H pair:
    provisioned with the least TPC-H data, SF 0.01; the load pair loads the real scale."""
    return provision(a.dbduel, a.work, f"tpch-{family}", f"""[study]
name = "tpch"
description = "bench/vs-peers: one {family} sandbox for the TPC-H pair"
[dataset]
generator = "tpch"
sf = 0.01
seed = 42
[[contender]]
name = "{family}"
engine = "{family}"
{TPCH_SERVERS[family]['options']}
[[step]]
name = "load"
kind = "load"
""")


def fresh_database(family, sb, name):
    """Drop database `name` on the sandbox if it exists and create it empty."""
    if family == "mariadb":
        mysql_query(sb["port"], password_env(sb),
                    f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}")
        return
    with open(secret_file(sb)) as f:
        env = {**os.environ, "PGPASSWORD": f.read().strip()}
    for sql in (f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}"):
        subprocess.run([pg_bin("psql"), "-h", "127.0.0.1", "-p", str(sb["port"]), "-U", "dbduel",
                        "-d", "postgres", "-q", "-c", sql],
                       check=True, capture_output=True, env=env)


# ---------------------------------------------------------------- loads: sysbench prepare


def databases(port, env):
    """The databases of the sandbox at `port`."""
    return {d for [d] in mysql_query(port, env, "SHOW DATABASES")}


def sbtest_rows(port, env, db):
    """The rows of sbtest1..TABLES in `db`, counted by the server."""
    return sum(int(mysql_query(port, env, f"SELECT COUNT(*) FROM `{db}`.sbtest{i}")[0][0])
               for i in range(1, TABLES + 1))


def load_part(a, out, part="mariadb"):
    """`sysbench oltp_read_write prepare` (A) against dbduel's load step (B) of the same sbtest
    tables — TABLES tables of BENCH_LOAD_ROWS rows, the primary key and the secondary index
    k_N — on one sandbox of `part`, alternating A B, B A, …; each side loads into a database
    that did not exist before it, with BENCH_LOAD_THREADS threads (sysbench's --threads, which
    it spreads over the tables; dbduel's `parallel`), and its rows are counted by the server
    afterwards. Each side's time is its whole command's wall time (dbduel's includes making
    the rows, its preflight and its report); a round's ratio is sysbench's over dbduel's
    (above 1: dbduel faster)."""
    engine, _, _ = SYSBENCH_SERVERS[part]
    sb = sbtest_sandbox(a, part)
    port, env = sb["port"], password_env(sb)
    rows, threads = a.load_rows, a.load_threads
    key = f"{part}-load"
    log(f"{key}: {part} {sb.get('server_version')} on port {port}: {TABLES} sbtest tables × "
        f"{rows:,} rows, {threads} threads, {a.load_rounds} round(s) of A B")
    target = f"mysql://root@127.0.0.1:{port}/dbduel_load"

    def peer(label):
        mysql_query(port, env, "DROP DATABASE IF EXISTS sbprep; CREATE DATABASE sbprep")
        r = run_client(["sysbench", "oltp_read_write", "--db-driver=mysql",
                        "--mysql-host=127.0.0.1", f"--mysql-port={port}", "--mysql-user=root",
                        "--mysql-db=sbprep", f"--tables={TABLES}", f"--table-size={rows}",
                        f"--threads={threads}", "prepare"],
                       os.path.join(a.work, f"{label}.log"), env=env)
        must(r, f"sysbench prepare ({label})")
        n = sbtest_rows(port, env, "sbprep")
        mysql_query(port, env, "DROP DATABASE sbprep")
        log(f"  {label}: {r['wall_s']:.1f} s, {r['cpu_s']:.1f} s of client CPU, {n:,} rows")
        return {"wall_s": r["wall_s"], "client_cpu_s": r["cpu_s"], "rows": n}

    def ours(label):
        before = databases(port, env)
        study = dbduel_study(target, engine, f'kind = "load"\nparallel = {threads}',
                             password_file=secret_file(sb),
                             dataset=f'generator = "sbtest"\ntables = {TABLES}\nrows = {rows}')
        r = dbduel_run(a.dbduel, a.work, label, study)
        made = sorted(databases(port, env) - before)
        if len(made) != 1:
            raise SystemExit(f"error: {label}: expected one database made by dbduel, found {made}")
        n = sbtest_rows(port, env, made[0])
        mysql_query(port, env, f"DROP DATABASE `{made[0]}`")
        # Where dbduel's time goes: making the rows (the run's manifest), loading them and
        # building the secondary indexes (the load step's details); the rest is the run's
        # own (preflight, counting the rows, the report).
        d = r["step"]["details"]
        [manifest] = glob.glob(os.path.join(a.work, "runs", label, "*", "manifest.json"))
        with open(manifest) as f:
            generate_s = json.load(f)["dataset"]["generate_s"]
        log(f"  {label}: {r['wall_s']:.1f} s ({generate_s:.1f} s making the rows, "
            f"{d['load_s']:.1f} s loading them by {d['method']}, {d['index_s']:.1f} s building "
            f"the indexes), {r['cpu_s']:.1f} s of client CPU, {n:,} rows")
        return {"wall_s": r["wall_s"], "generate_s": generate_s, "load_s": d["load_s"],
                "index_s": d["index_s"], "method": d["method"], "client_cpu_s": r["cpu_s"],
                "rows": n}

    both = alternating(a.load_rounds, peer, ours, key)
    runs = {"sysbench": both["peer"], "dbduel": both["dbduel"]}
    for who, ms in runs.items():
        for m in ms:
            if m["rows"] != TABLES * rows:
                raise SystemExit(f"error: {key}: {who} loaded {m['rows']:,} rows, "
                                 f"not {TABLES * rows:,}")
    ratios = [p["wall_s"] / o["wall_s"] for p, o in zip(runs["sysbench"], runs["dbduel"])]
    out[key] = {"server_version": sb.get("server_version"), "port": port, "tables": TABLES,
                "rows_per_table": rows, "threads": threads, "runs": runs,
                "ratio": median_interval(ratios)}


def print_load(key, r):
    """One load pair's line: each side's median time and the ratio with its interval."""
    med = lambda ms, k: sorted(m[k] for m in ms)[len(ms) // 2]
    i, ours = r["ratio"], r["runs"]["dbduel"]
    print(f"{key} ({r['server_version']}): {r['tables']} sbtest tables × {r['rows_per_table']:,} "
          f"rows, {r['threads']} threads: sysbench prepare {med(r['runs']['sysbench'], 'wall_s'):.1f} s, "
          f"dbduel {med(ours, 'wall_s'):.1f} s; ratio {i['median']:.2f}× "
          f"[{i['lo']:.2f}, {i['hi']:.2f}] over {i['n']} round(s), {i['confidence']:.0%} "
          "(above 1: dbduel faster)")
    print(f"  dbduel's time (medians): {med(ours, 'generate_s'):.1f} s making the rows, "
          f"{med(ours, 'load_s'):.1f} s loading them ({ours[0]['method']}), "
          f"{med(ours, 'index_s'):.1f} s building the indexes, the rest its run's own")


def parse_go_tpc_tpch(text):
    """go-tpc's closing summary of `tpch run`: each query's mean seconds, {1: 2.31, …}, and
    the queries that failed."""
    summary = re.findall(r"\[Summary\] Q(\d+)(_ERR)?: ([\d.]+)s", text)
    if not summary:
        raise SystemExit(f"error: go-tpc's output lacks its [Summary] lines:\n{text[-2000:]}")
    return ({int(q): float(s) for q, err, s in summary if not err},
            sorted(int(q) for q, err, _ in summary if err))


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def tpch_part(a, out):
    """go-tpc's `tpch` (A) against dbduel (B) at the same scale factor on one sandbox a server
    family: the load pair (go-tpc's `tpch prepare` into its own database, dbduel's load step
    into dbduel's), then the query pair on dbduel's tables (go-tpc's `tpch run` and dbduel's
    `tpch-power` step, warm, each query once a round)."""
    gotpc = go_tpc_bin()
    out["tpch"] = {"go_tpc": GO_TPC_VERSION, "sf": a.tpch_sf,
                   "load_rounds": a.tpch_rounds, "query_rounds": a.tpch_query_rounds,
                   "queries": a.tpch_queries, "servers": {}}
    for family in a.tpch_servers:
        sb = tpch_sandbox(a, family)
        server = TPCH_SERVERS[family]
        with open(secret_file(sb)) as f:
            secret = f.read().strip()
        # go-tpc reads no password variable: it gets the throwaway sandbox's on its command line.
        conn = ["-H", "127.0.0.1", "-P", str(sb["port"]), "-U", server["user"], "-p", secret,
                *server["go_tpc"]]
        target = f"{server['scheme']}://{server['user']}@127.0.0.1:{sb['port']}/{TPCH_DB}"
        log(f"tpch: {family} {sb.get('server_version')} on port {sb['port']}: SF {a.tpch_sf}, "
            f"{a.tpch_rounds} load round(s) and {a.tpch_query_rounds} query round(s) of A B")
        result = {"server_version": sb.get("server_version"), "port": sb["port"]}
        out["tpch"]["servers"][family] = result
        result["load"] = tpch_load_pair(a, family, sb, gotpc, conn, target)
        result["queries"] = tpch_query_pair(a, family, sb, gotpc, conn, target)


def tpch_dbduel_study(a, family, sb, target, step):
    """A study running `step` with dbduel against `target` on sandbox `sb`, TPC-H's dataset
    at the pair's scale factor."""
    return dbduel_study(target, family, step, password_file=secret_file(sb),
                        dataset=f'generator = "tpch"\nsf = {a.tpch_sf}\nseed = 42')


def tpch_load_pair(a, family, sb, gotpc, conn, target):
    """go-tpc's `tpch prepare` (A) into its own emptied database against dbduel's load step
    (B) into dbduel's, alternating. go-tpc generates and inserts as it goes, the tables with
    their primary keys only; dbduel generates the tables' files first, then loads them with
    their primary keys, then builds its secondary indexes and adds the foreign keys. Ratios
    are go-tpc's seconds over dbduel's (above 1: dbduel faster): against dbduel's generation
    and load (primary keys only, like go-tpc's tables), and against all of it."""

    def peer(label):
        fresh_database(family, sb, GO_TPC_TPCH_DB)
        log(f"  {label} ...")
        r = run_client([gotpc, "tpch", "prepare", *conn, "-D", GO_TPC_TPCH_DB,
                        "--sf", str(a.tpch_sf), "-T", str(os.cpu_count())],
                       os.path.join(a.work, f"{label}.log"))
        must(r, f"go-tpc tpch prepare ({label})")
        log(f"  {label}: {r['wall_s']:.1f} s")
        return {"seconds": r["wall_s"], "cpu_s": r["cpu_s"],
                "machine_busy_share": r["host_busy_s"] / max(r["host_cpu_s"], 1e-9)}

    def ours(label):
        log(f"  {label} ...")
        r = dbduel_run(a.dbduel, a.work, label,
                       tpch_dbduel_study(a, family, sb, target, 'kind = "load"'))
        d = r["step"]["details"]
        [manifest] = glob.glob(os.path.join(a.work, "runs", label, "*", "manifest.json"))
        with open(manifest) as f:
            generate = json.load(f)["dataset"]["generate_s"]
        m = {"seconds": generate + d["load_s"], "with_keys_s": generate + d["elapsed_s"],
             "generate_s": generate, "load_s": d["load_s"], "index_s": d["index_s"],
             "foreign_key_s": d["foreign_key_s"], "indexes": len(d["indexes"]),
             # the statements that added them (with their SET lines on MariaDB)
             "foreign_keys": sum("FOREIGN KEY" in sql for sql in d["foreign_keys"]),
             "rows": d["rows_loaded"],
             "method": d["method"], "run_wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
             "machine_busy_share": r["host_busy_s"] / max(r["host_cpu_s"], 1e-9)}
        log(f"  {label}: {m['seconds']:.1f} s generating and loading, {m['with_keys_s']:.1f} s "
            f"with {m['indexes']} indexes and {m['foreign_keys']} foreign keys")
        return m

    runs = alternating(a.tpch_rounds, peer, ours, f"tpch-{family}-load")
    pairs = list(zip(runs["peer"], runs["dbduel"]))
    return {
        "go_tpc_s": median_interval([p["seconds"] for p, _ in pairs]),
        "dbduel_s": median_interval([d["seconds"] for _, d in pairs]),
        "dbduel_with_keys_s": median_interval([d["with_keys_s"] for _, d in pairs]),
        "ratio": median_interval([p["seconds"] / d["seconds"] for p, d in pairs]),
        "ratio_with_keys": median_interval([p["seconds"] / d["with_keys_s"] for p, d in pairs]),
        "runs": runs,
    }


def tpch_query_pair(a, family, sb, gotpc, conn, target):
    """go-tpc's `tpch run` (A) and dbduel's `tpch-power` step (B) on the same tables (dbduel's,
    as its last load left them), alternating; each round each client runs each query once,
    warm (no restart; one go-tpc pass first, not measured, warms the caches). Per query the
    ratio go-tpc seconds / dbduel seconds of each round, its median with its interval; and
    the geometric mean of a round's ratios, over the queries both time above go-tpc's floor."""
    queries = a.tpch_queries
    argv = [gotpc, "tpch", "run", *conn, "-D", TPCH_DB, "--sf", str(a.tpch_sf), "-T", "1",
            "--queries", ",".join(f"q{q}" for q in queries), "--count", str(len(queries))]
    warm = run_client(argv, os.path.join(a.work, f"tpch-{family}-warmup.log"))
    if warm["rc"] != 0:
        # go-tpc cannot run its queries here: say why (its panic's line) and keep the load pair.
        lines = warm["output"].splitlines()
        why = next((l for l in lines if l.startswith("panic:")), "\n".join(lines[-6:]))
        log(f"tpch: go-tpc tpch run fails on {family}, no query pair:\n{why}")
        return {"error": why}

    def peer(label):
        log(f"  {label} ...")
        r = run_client(argv, os.path.join(a.work, f"{label}.log"))
        must(r, f"go-tpc tpch run ({label})")
        seconds, failed = parse_go_tpc_tpch(r["output"])
        if failed:
            raise SystemExit(f"error: go-tpc's queries {failed} failed ({label})")
        return {"seconds": seconds, "wall_s": r["wall_s"], "cpu_s": r["cpu_s"]}

    def ours(label):
        log(f"  {label} ...")
        step = f"""kind = "tpch-power"
cold = false
hot_runs = 0
timeout_s = {a.tpch_timeout_s}
queries = {list(queries)}"""
        r = dbduel_run(a.dbduel, a.work, label, tpch_dbduel_study(a, family, sb, target, step))
        runs = r["step"]["details"]["queries"]
        bad = [f"Q{q['query']}: {q['status']}" for q in runs if q["status"] != "ok"]
        if bad:
            raise SystemExit(f"error: dbduel's queries failed ({label}): {'; '.join(bad)}")
        return {"seconds": {q["query"]: q["cold_s"] for q in runs},
                "params": {q["query"]: q["params"] for q in runs},
                "wall_s": r["wall_s"], "cpu_s": r["cpu_s"]}

    runs = alternating(a.tpch_query_rounds, peer, ours, f"tpch-{family}-queries")
    pairs = list(zip(runs["peer"], runs["dbduel"]))
    per_query = {}
    for q in queries:
        g = [p["seconds"][q] for p, _ in pairs]
        d = [b["seconds"][q] for _, b in pairs]
        per_query[q] = {
            "go_tpc_s": median_interval(g), "dbduel_s": median_interval(d),
            "ratio": median_interval([x / y for x, y in zip(g, d)]),
            # at go-tpc's floor its figure is a bound, not a time
            "above_floor": median_interval(g)["median"] > GO_TPC_FLOOR_S,
        }
    timed = [q for q in queries if per_query[q]["above_floor"]]
    geo = [geomean([p["seconds"][q] / d["seconds"][q] for q in timed]) for p, d in pairs] \
        if timed else []
    return {
        "per_query": per_query,
        "geomean_queries": timed,
        "geomean_ratio": median_interval(geo) if geo else None,
        "dbduel_params": runs["dbduel"][0]["params"],
        "runs": [{"go_tpc": p["seconds"], "dbduel": d["seconds"]} for p, d in pairs],
    }


def print_tpch(tpch):
    """The TPC-H pair's lines: each server's load, then each query's seconds and ratio."""
    def ci(r, digits=3):
        return (f"{r['median']:.{digits}f} [{r['lo']:.{digits}f}–{r['hi']:.{digits}f}] "
                f"{r['confidence']:.1%}")

    print(f"TPC-H SF {tpch['sf']} vs go-tpc {tpch['go_tpc']}"
          f" ({tpch['load_rounds']} load and {tpch['query_rounds']} query round(s), A B alternating;"
          " ratio = go-tpc seconds / dbduel seconds,"
          " above 1: dbduel faster)")
    for family, s in tpch["servers"].items():
        m = re.search(r"\d+(\.\d+)+", s.get("server_version") or "")
        name = f"{family} {m.group(0) if m else '?'}"
        l = s["load"]
        print(f"{name}: load: go-tpc prepare {l['go_tpc_s']['median']:.1f} s (primary keys only); "
              f"dbduel {l['dbduel_s']['median']:.1f} s generating + loading (primary keys only), "
              f"ratio {ci(l['ratio'], 2)}; {l['dbduel_with_keys_s']['median']:.1f} s with its "
              f"indexes and foreign keys, ratio {ci(l['ratio_with_keys'], 2)}")
        qp = s["queries"]
        if "error" in qp:
            print(f"{name}: queries: no pair, go-tpc's `tpch run` fails here: {qp['error']}")
            continue
        print(f"{name}: queries on dbduel's tables, warm, median of the rounds:")
        print(f"  {'query':<6} {'go-tpc s':>9} {'dbduel s':>9} {'ratio [interval] conf':>26}")
        for q, r in qp["per_query"].items():
            floor = "" if r["above_floor"] else f"  (go-tpc's floor {GO_TPC_FLOOR_S} s: no ratio)"
            print(f"  Q{q:<5} {r['go_tpc_s']['median']:>9.2f} {r['dbduel_s']['median']:>9.3f}"
                  f" {ci(r['ratio']):>26}{floor}")
        g = qp["geomean_ratio"]
        if g:
            within = "within" if 0.95 <= g["lo"] and g["hi"] <= 1.05 else "not shown within"
            timed = {str(q) for q in qp["geomean_queries"]}
            left = [f"Q{q}" for q in qp["per_query"] if str(q) not in timed]
            print(f"  geometric mean of the ratios over {len(qp['geomean_queries'])} queries"
                  f"{' (not ' + ', '.join(left) + ')' if left else ''}: {ci(g)} — {within} 5 %")


# ---------------------------------------------------------------- pairs


def measured(r, qps, queries, errors, p95_us, server_cpu_s, server_queries, extra, work=None):
    other = r["host_busy_s"] - r["cpu_s"] - server_cpu_s
    return {
        "qps": qps,
        "queries": queries,
        "errors": errors,
        "p95_us": p95_us,
        "client_cpu_s": r["cpu_s"],
        "client_cpu_user_s": r["cpu_user_s"],
        "client_cpu_sys_s": r["cpu_sys_s"],
        "client_cpu_us_per_query": r["cpu_s"] * 1e6 / max(queries, 1),
        "wall_s": r["wall_s"],
        "server_cpu_s": server_cpu_s,
        "server_cpu_us_per_query": server_cpu_s * 1e6 / max(queries, 1),
        "server_counted_queries": server_queries,
        # a query and its answer are 2 when every ACK rides on the next query or answer
        "tcp_segments_per_query": r["tcp_segments"] / max(queries, 1),
        "machine_cpu_s": r["host_cpu_s"],
        "machine_busy_s": r["host_busy_s"],
        # what neither the client nor the server used: other processes, the kernel's own work
        "others_cpu_share": max(other, 0.0) / max(r["host_cpu_s"], 1e-9),
        # the server's work counters over the run (MYSQL_WORK, PG_WORK), where the pair has them
        "server_work": work,
        "client": extra,
    }


# ---------------------------------------------------------------- YCSB: go-ycsb

YCSB_RECORDS = 100_000
# go-ycsb's binding, by the server a part runs on.
YCSB_SERVERS = {"ycsb-mariadb": ("mariadb", "mysql"), "ycsb-postgres": ("postgres", "pg"),
                "ycsb-mongodb": ("mongodb", "mongodb")}
# The workloads each part runs: A and C on the SQL servers; C on the MongoDB-wire server, whose
# FerretDB (SQLite backend) scans the collection for each `_id`, so its collection is smaller
# (BENCH_YCSB_MONGODB_RECORDS) and its pairs measure two clients on a server-bound engine.
YCSB_PART_WORKLOADS = {"ycsb-mariadb": "a c", "ycsb-postgres": "a c", "ycsb-mongodb": "c"}
# The core workloads the pairs run, as YCSB ships them (dbduel's `workload = "a"` is the same).
YCSB_WORKLOADS = {
    "a": "readproportion=0.5\nupdateproportion=0.5\nscanproportion=0\ninsertproportion=0\n",
    "c": "readproportion=1\nupdateproportion=0\nscanproportion=0\ninsertproportion=0\n",
}


def go_ycsb_bin():
    """The go-ycsb scripts/install-go-ycsb builds."""
    b = shutil.which("go-ycsb")
    if not b:
        raise SystemExit("error: go-ycsb is not installed: run scripts/install-go-ycsb")
    return b


def parse_go_ycsb(text):
    """go-ycsb's closing summary ("Run finished", then one `OP - Takes(s): …, Count: …, OPS: …`
    line an operation kind, TOTAL among them): the operations, their rate, the errors
    (`*_ERROR` kinds) and each kind's count."""
    tail = text.rsplit("Run finished", 1)[-1]
    kinds = {}
    for line in tail.splitlines():
        m = re.match(r"^(\S+)\s+- Takes\(s\): ([\d.]+), Count: (\d+), OPS: ([\d.]+)", line)
        if m:
            kinds[m.group(1)] = {"count": int(m.group(3)), "ops": float(m.group(4))}
    total = kinds.get("TOTAL")
    if not total:
        raise SystemExit("error: go-ycsb printed no TOTAL line:\n" + text[-2000:])
    errors = sum(k["count"] for n, k in kinds.items() if n.endswith("_ERROR"))
    return {"ops": total["count"], "ops_per_s": total["ops"], "errors": errors,
            "kinds": {n: k["count"] for n, k in kinds.items() if n != "TOTAL"}}


def ycsb_part(a, out, part):
    """go-ycsb (A) and dbduel's ycsb step (B) on one sandbox of `part`, each on its own
    usertable of YCSB_RECORDS records (dbduel's loaded by dbduel, go-ycsb's by `go-ycsb
    load`): workloads A and C at each thread count, both clients logged in as the sandbox's
    superuser, go-ycsb with the same workload properties and YCSB's scrambled zipfian. The
    rate compared is operations a second, the CPU each client's per operation."""
    family, binding = YCSB_SERVERS[part]
    records = a.ycsb_mongodb_records if family == "mongodb" else YCSB_RECORDS
    opts = {"mariadb": "storage_engine = \"innodb\", buffer_pool_mb = 1024, "
                       "server = { max_connections = 1000 }",
            "postgres": "shared_buffers_mb = 1024, stat_statements = false, "
                        "server = { max_connections = 1000 }",
            "mongodb": ""}[family]
    sb = provision(a.dbduel, a.work, part, f"""[study]
name = "ycsb"
description = "bench/vs-peers: one YCSB usertable in one {family} sandbox"
[dataset]
generator = "ycsb"
rows = {records}
[[contender]]
name = "db"
engine = "{family}"
options = {{ {opts} }}
[[step]]
name = "load"
kind = "load"
""")
    port, pid = sb.get("port"), sb["pid"]
    # go-ycsb runs on a copy of its own, loaded by `go-ycsb load`: its key names are not
    # YCSB's (its FNV-1a hashes a record number's bytes big-endian, YCSB's lowest byte
    # first), so on dbduel's table — YCSB's keys — nearly every key it drew would be missing.
    db, peer_db = "dbduel_ycsb", "goycsb"
    password_file = None
    if family == "mongodb":
        # FerretDB listens on its private socket only (no accounts on its SQLite backend);
        # go-ycsb's binding always writes to the database `ycsb`.
        user, where = "-", sb["socket"]
        url = "mongodb://" + urllib.parse.quote(sb["socket"], safe="")
        target = f"{url}/{db}"
        conn = [f"mongodb.url={url}"]
    else:
        password_file = secret_file(sb)
        with open(password_file) as f:
            password = f.read().strip()
        where = f"port {port}"
        fresh_database(family, sb, peer_db)
    if family == "mariadb":
        user = "root"
        target = f"mysql://root@127.0.0.1:{port}/{db}"
        conn = [f"mysql.host=127.0.0.1", f"mysql.port={port}", "mysql.user=root",
                f"mysql.password={password}", f"mysql.db={peer_db}"]
    elif family == "postgres":
        user = "dbduel"
        target = f"postgres://dbduel@127.0.0.1:{port}/{db}?sslmode=disable"
        conn = ["pg.host=127.0.0.1", f"pg.port={port}", "pg.user=dbduel",
                f"pg.password={password}", f"pg.db={peer_db}", "pg.sslmode=disable"]
    go_ycsb = go_ycsb_bin()
    out[part] = {"server_version": sb.get("server_version"), "port": port, "user": user,
                 "records": records, "pairs": []}
    log(f"{part}: {family} {sb.get('server_version')} on {where}: {records:,} records")
    files = {}
    for w, props in YCSB_WORKLOADS.items():
        path = os.path.join(a.work, f"workload{w}")
        with open(path, "w") as f:
            f.write("workload=core\nreadallfields=true\nrequestdistribution=zipfian\n" + props)
        files[w] = path
    argv = [go_ycsb, "load", binding, "-P", files["a"], "--threads", str(os.cpu_count() or 2),
            "-p", f"recordcount={records}"]
    for c in conn:
        argv += ["-p", c]
    r = run_client(argv, os.path.join(a.work, f"{part}-go-ycsb-load.log"))
    must(r, "go-ycsb load")
    loaded = parse_go_ycsb(r["output"])
    if loaded["errors"] or loaded["ops"] != records:
        raise SystemExit(f"error: go-ycsb load inserted {loaded['ops']:,} records with "
                         f"{loaded['errors']} errors, not {records:,}")
    log(f"  go-ycsb load: {records:,} records into its own database in {r['wall_s']:.1f} s")

    def peer(workload, threads, label):
        w = workload.split()[-1]
        # go-ycsb v1.0.3 reads `maxexecutiontime` but never stops on it: it runs until
        # operationcount, or until a SIGINT, after which it prints its summary of the run so far.
        argv = [go_ycsb, "run", binding, "-P", files[w], "--threads", str(threads),
                "-p", f"recordcount={records}", "-p", "operationcount=1000000000"]
        for c in conn:
            argv += ["-p", c]
        s0 = tree_cpu_s(pid)
        r = run_client(argv, os.path.join(a.work, f"{label}.log"), interrupt_after_s=a.duration)
        must(r, f"go-ycsb ({label})")
        s1 = tree_cpu_s(pid)
        f = parse_go_ycsb(r["output"])
        return measured(r, f["ops_per_s"], f["ops"], f["errors"], None, s1 - s0, None, f)

    def ours(workload, threads, label):
        w = workload.split()[-1]
        step = f'kind = "ycsb"\nworkload = "{w}"\nthreads = {threads}\nduration_s = {a.duration}'
        s0 = tree_cpu_s(pid)
        r = dbduel_run(a.dbduel, a.work, label,
                       dbduel_study(target, family, step, password_file=password_file,
                                    dataset=f"generator = \"ycsb\"\nrows = {records}"))
        s1 = tree_cpu_s(pid)
        lv = r["step"]["details"]["levels"][0]
        mix = {o["name"]: o["count"] for o in lv["per_op"]}
        return measured(r, lv["ops_per_s"], lv["ops"], lv["errors"],
                        (lv["latency_us"] or {}).get("p95"), s1 - s0, None,
                        {"kinds": mix, "measured_s": lv["measured_s"]})

    for w in YCSB_PART_WORKLOADS[part].split():
        for threads in a.threads:
            out[part]["pairs"].append(
                pair(part, f"workload {w}", "go-ycsb", threads, a.rounds, peer, ours))


def print_ycsb_mixes(out):
    """For each go-ycsb pair, the operation mix each client ran over its rounds beside the
    workload file's proportions (go-ycsb's failed operations, its `*_ERROR` kinds, apart)."""
    for part in YCSB_SERVERS:
        for p in out.get(part, {}).get("pairs", []):
            w = p["workload"].split()[-1]
            props = dict(l.split("=", 1) for l in YCSB_WORKLOADS[w].split())
            want = ", ".join(f"{k.removesuffix('proportion')} {float(v):.0%}"
                             for k, v in props.items() if float(v) > 0)

            def shares(side):
                counts = {}
                for r in p["runs"][side]:
                    for k, n in r["client"]["kinds"].items():
                        counts[k.lower()] = counts.get(k.lower(), 0) + n
                done = {k: n for k, n in counts.items() if not k.endswith("_error")}
                total = sum(done.values()) or 1
                failed = sum(n for k, n in counts.items() if k.endswith("_error"))
                text = ", ".join(f"{k} {n / total:.1%}" for k, n in sorted(done.items()))
                return text + (f" ({failed:,} failed)" if failed else "")

            print(f"ycsb mix, {YCSB_SERVERS[part][0]} {p['workload']}@{p['threads']} "
                  f"(file: {want}): go-ycsb {shares('peer')}; dbduel {shares('dbduel')}")


def median_interval(xs):
    """The median of `xs` with the order-statistic (binomial) interval dbduel's `--repeat`
    gives a figure (src/results/spread.rs): sorted, [x(k), x(n+1-k)] for the largest k whose
    coverage 1 - 2·P(Binomial(n, 1/2) <= k - 1) still reaches 95 %; below six samples that is
    min–max, with the confidence it has (93.8 % at five, 87.5 % at four)."""
    xs = sorted(xs)
    n = len(xs)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

    def coverage(k):
        return max(0.0, 1 - 2 * sum(math.comb(n, j) for j in range(k)) / 2 ** n)

    k = 1
    while k < (n + 1) // 2 and coverage(k + 1) >= 0.95:
        k += 1
    return {"median": med, "lo": xs[k - 1], "hi": xs[n - k], "confidence": coverage(k), "n": n}


def work_per_query(ms):
    """The server's work counters summed over runs `ms`, per query; None where runs lack them."""
    if any(m.get("server_work") is None for m in ms):
        return None
    q = max(sum(m["queries"] for m in ms), 1)
    names = {k for m in ms for k in m["server_work"]}
    return {k: sum(m["server_work"].get(k, 0) for m in ms) / q for k in sorted(names)}


# Two clients' work counters a query differ when they are further apart than this share of
# the larger and more than WORK_SLACK a query (the readings of the counters themselves, a few
# rows a run, stay under it).
WORK_SHARE = 0.02
WORK_SLACK = 0.05


def work_differs(peer, ours):
    """The counters a query whose values differ between the peer's runs and dbduel's:
    {name: [peer, dbduel]}; None when the pair has no counters."""
    if peer is None or ours is None:
        return None
    out = {}
    for k in sorted(set(peer) | set(ours)):
        x, y = peer.get(k, 0.0), ours.get(k, 0.0)
        if abs(x - y) > max(WORK_SHARE * max(abs(x), abs(y)), WORK_SLACK):
            out[k] = [round(x, 3), round(y, 3)]
    return out


# The least confidence an interval needs to count as showing a ratio (five rounds give 93.8 %).
INTERVAL_CONFIDENCE = 0.90
# A pair whose round ratios spread wider than this (hi / lo of the interval) is flagged: its
# rounds disagree, so its ratio is a weaker statement than its digits suggest.
UNSTEADY_SPREAD = 1.10


def alternating(rounds, peer, ours, prefix):
    """`rounds` rounds of the peer (A) and dbduel (B), in the order A B, B A, A B, … so that a
    drift of the machine over the rounds favours neither; each side's results in round order.
    Each run is `peer(label)` or `ours(label)`, its label PREFIX-r<round>-<side>."""
    runs = {"peer": [], "dbduel": []}
    for i in range(rounds):
        order = (("peer", peer), ("dbduel", ours))
        for who, fn in order if i % 2 == 0 else order[::-1]:
            runs[who].append(fn(f"{prefix}-r{i + 1}-{who}"))
    return runs


def pair(part, workload, peer_name, threads, rounds, peer, ours):
    """`rounds` rounds of the peer (A) and dbduel (B), alternating A B, B A, A B, … so that a
    drift of the machine over the pair favours neither; each round's ratio is B over A in
    that round, and the pair's ratio is the median of the rounds' with its interval."""

    def checked(fn):
        def run(label):
            log(f"  {label} ...")
            m = fn(workload, threads, label)
            log(f"  {label}: {m['qps']:,.0f} qps, client {m['client_cpu_us_per_query']:.2f} µs/query, "
                f"server {m['server_cpu_us_per_query']:.2f} µs/query, "
                f"{m['tcp_segments_per_query']:.2f} TCP segments/query")
            counted = m["server_counted_queries"]
            if counted and abs(counted - m["queries"]) > 0.02 * m["queries"] + 50:
                log(f"  warning: {label}: the client reports {m['queries']} queries, "
                    f"the server counted {counted}")
            if m["others_cpu_share"] > 0.10:
                log(f"  warning: {label}: other processes used "
                    f"{m['others_cpu_share']:.0%} of the machine during this run")
            return m
        return run

    prefix = f"{part}-{workload.replace(' ', '-')}-t{threads}"
    runs = alternating(rounds, checked(peer), checked(ours), prefix)

    def agg(ms):
        q = sum(m["queries"] for m in ms)
        return {
            "qps": sum(m["qps"] for m in ms) / len(ms),
            "client_cpu_us_per_query": sum(m["client_cpu_s"] for m in ms) * 1e6 / max(q, 1),
            "client_user_us_per_query": sum(m["client_cpu_user_s"] for m in ms) * 1e6 / max(q, 1),
            "client_sys_us_per_query": sum(m["client_cpu_sys_s"] for m in ms) * 1e6 / max(q, 1),
            "server_cpu_us_per_query": sum(m["server_cpu_s"] for m in ms) * 1e6 / max(q, 1),
            "tcp_segments_per_query": sum(m["tcp_segments_per_query"] * m["queries"] for m in ms) / max(q, 1),
            "errors": sum(m["errors"] for m in ms),
            "others_cpu_share_max": max(m["others_cpu_share"] for m in ms),
            "server_work_per_query": work_per_query(ms),
        }

    p, d = agg(runs["peer"]), agg(runs["dbduel"])
    # The best ratio any client could reach against this peer on this server: the server's
    # work the peer's, and the client's CPU only the kernel's part, the lower of the two
    # clients' system time a query (sending, receiving, sleeping and waking). On a saturated
    # machine QPS ≈ cores / (server + client) µs a query, so this is the ratio's ceiling with
    # a client that spends nothing in user space.
    floor = min(p["client_sys_us_per_query"], d["client_sys_us_per_query"])
    served = p["server_cpu_us_per_query"]
    ceiling = (served + p["client_cpu_us_per_query"]) / (served + floor) if served else None
    round_ratios = [b["qps"] / a["qps"] for a, b in zip(runs["peer"], runs["dbduel"]) if a["qps"]]
    ratio = median_interval(round_ratios) if round_ratios else None
    return {
        "part": part,
        "workload": workload,
        "peer": peer_name,
        "threads": threads,
        "rounds": rounds,
        "order": "A B, then B A, alternating",
        "peer_summary": p,
        "dbduel_summary": d,
        "ratio": ratio["median"] if ratio else None,
        "ratio_interval": ratio,
        "ceiling": ceiling,
        # Steady: enough rounds for an interval, and the interval within UNSTEADY_SPREAD.
        "steady": bool(ratio) and not too_few(ratio)
                  and ratio["hi"] / ratio["lo"] <= UNSTEADY_SPREAD,
        "server_work_differs": work_differs(p["server_work_per_query"],
                                            d["server_work_per_query"]),
        "round_ratios": round_ratios,
        "runs": runs,
    }


def too_few(r):
    """Whether ratio interval `r` comes from too few rounds to show anything (a point from one
    round, min–max at 50 % from two)."""
    return bool(r) and r["confidence"] < INTERVAL_CONFIDENCE


def named(p):
    """A pair as the table's footer names it: `mariadb read_only@8`."""
    return f"{p['server'].split()[0]} {p['workload']}@{p['threads']}"


def print_table(pairs):
    """One line a pair: the ratio (median of its rounds) with its interval and that interval's
    confidence, flagged `!` when the rounds disagree; then which targets the run showed."""
    # tpcc rows: the rate is tpmC, and CPU is per transaction
    head = (f"{'server':<16} {'workload':<30} {'threads':>7} {'peer QPS':>10} {'dbduel QPS':>11}"
            f" {'ratio [interval] conf':>27} {'peer CPU µs/q':>14} {'dbduel CPU µs/q':>16}"
            f" {'user/sys µs/q peer':>18} {'user/sys dbduel':>16}"
            f" {'server µs/q peer/dbduel':>24} {'ceiling':>8} {'segs/q peer/dbduel':>19}")
    print(head)
    print("-" * len(head))
    for p in pairs:
        a, b, r = p["peer_summary"], p["dbduel_summary"], p["ratio_interval"]
        name = f"{p['workload']} vs {p['peer']}"
        srv = f"{a['server_cpu_us_per_query']:.2f} / {b['server_cpu_us_per_query']:.2f}"
        flag = "?" if too_few(r) else " " if p["steady"] else "!"
        ratio = (f"{r['median']:.3f} [{r['lo']:.2f}–{r['hi']:.2f}] {r['confidence']:.1%}{flag}"
                 if r else "-")
        split = [f"{x['client_user_us_per_query']:.1f} / {x['client_sys_us_per_query']:.1f}"
                 for x in (a, b)]
        ceiling = f"{p['ceiling']:.3f}" if p.get("ceiling") else "-"
        segs = "/".join(f"{x.get('tcp_segments_per_query', 0):.2f}" for x in (a, b))
        print(f"{p['server']:<16} {name:<30} {p['threads']:>7} {a['qps']:>10,.0f} {b['qps']:>11,.0f}"
              f" {ratio:>27} {a['client_cpu_us_per_query']:>14.2f}"
              f" {b['client_cpu_us_per_query']:>16.2f} {split[0]:>18} {split[1]:>16}"
              f" {srv:>24} {ceiling:>8} {segs:>19}")
    print()
    n = len(pairs)
    lighter = [p for p in pairs if p["dbduel_summary"]["client_cpu_us_per_query"]
               <= p["peer_summary"]["client_cpu_us_per_query"]]
    few = [p for p in pairs if too_few(p["ratio_interval"])]
    shown = [p for p in pairs if p["ratio_interval"] and p not in few
             and p["ratio_interval"]["lo"] >= 1.10]
    median = [p for p in pairs if p["ratio"] and p["ratio"] >= 1.10]
    server = [p for p in pairs if p["dbduel_summary"]["server_cpu_us_per_query"]
              <= p["peer_summary"]["server_cpu_us_per_query"]]
    unsteady = [p for p in pairs if not p["steady"] and p not in few]
    capped = [p for p in pairs if p.get("ceiling") and p["ceiling"] < 1.10]
    counted = [p for p in pairs if p.get("server_work_differs") is not None]
    print(f"dbduel's client CPU per query at most the peer's: {len(lighter)} of {n} pairs")
    print(f"ratio >= 1.10: {len(median)} of {n} by the median, {len(shown)} of {n} by the whole "
          f"interval; server CPU per query serving dbduel at most the peer's: {len(server)} of {n}")
    if counted:
        more = [p for p in counted if any(y > x for x, y in p["server_work_differs"].values())]
        print(f"server work counters a query (handler reads and writes, plans, sorts, temporary "
              f"tables, bytes sent; the user tables' scans and rows, commits) no higher serving "
              f"dbduel than the peer: {len(counted) - len(more)} of {len(counted)} pairs")
        for p in counted:
            for k, (x, y) in p["server_work_differs"].items():
                print(f"  {'more' if y > x else 'less'} serving dbduel: {named(p)}: {k} {x:,.2f} "
                      f"a query serving {p['peer']}, {y:,.2f} serving dbduel")
    if unsteady:
        print(f"! rounds disagree (interval wider than ×{UNSTEADY_SPREAD:.2f}) in {len(unsteady)} "
              "pair(s): " + ", ".join(named(p) for p in unsteady)
              + " — more rounds (BENCH_ROUNDS) or a quieter machine")
    if few:
        print(f"? intervals under {INTERVAL_CONFIDENCE:.0%} confidence (fewer than five rounds) in "
              f"{len(few)} pair(s), not counted by the interval: " + ", ".join(named(p) for p in few))
    if capped:
        print(f"ceiling below 1.10 in {len(capped)} pair(s): "
              + ", ".join(f"{named(p)} ({p['ceiling']:.3f})" for p in capped)
              + " — even a client with no user-space work at all, the kernel's part alone "
              "(the lower system time a query of the two clients), would not reach 1.10 there")


def bench_args(doc):
    """The arguments every bench script takes from its shell wrapper (lib.sh): the dbduel
    binary, the work directory, where the results go."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--dbduel", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--results", default="bench/results")
    return ap.parse_args()


def main():
    a = bench_args(__doc__)
    # Many short rounds rather than a few long ones: each round's two runs sit closer in time,
    # so the host's drift cancels better, and with twelve the median's 95 % interval is the
    # 3rd to the 10th round ratio, so a round or two the host disturbed do not set it.
    a.duration = env_int("BENCH_DURATION_S", 5)
    a.rounds = env_int("BENCH_ROUNDS", 12)
    a.warmup = env_int("BENCH_WARMUP_S", min(10, a.duration))
    a.pg_scale = env_int("BENCH_PG_SCALE", 10)
    a.pg_jobs = env_int("BENCH_PG_JOBS", 0) or None
    a.jobs = env_int("BENCH_JOBS", 0) or None
    a.threads = [int(t) for t in os.environ.get("BENCH_THREADS", "8 32").split()]
    a.tpcc_threads = [int(t) for t in os.environ.get("BENCH_TPCC_THREADS", "8").split()]
    a.tpcc_warehouses = env_int("BENCH_TPCC_WAREHOUSES", 2)
    # go-tpc's `--sf` takes whole scale factors only (SF 1: six million line items)
    a.tpch_sf = env_int("BENCH_TPCH_SF", 1)
    a.tpch_rounds = env_int("BENCH_TPCH_ROUNDS", 3)
    # a pass over the 22 queries at SF 1 takes about a minute on MariaDB, a load three
    a.tpch_query_rounds = env_int("BENCH_TPCH_QUERY_ROUNDS", 6)
    a.tpch_queries = [int(q) for q in
                      os.environ.get("BENCH_TPCH_QUERIES", " ".join(map(str, range(1, 23)))).split()]
    a.tpch_servers = os.environ.get("BENCH_TPCH_SERVERS", "mariadb postgres").split()
    a.tpch_timeout_s = env_int("BENCH_TPCH_TIMEOUT_S", 600)
    # The load pair (`load`): sysbench prepare against dbduel's load step, not in the default
    # parts (a round loads BENCH_LOAD_ROWS rows into each of TABLES tables, twice).
    a.load_rows = env_int("BENCH_LOAD_ROWS", 1_000_000)
    a.load_threads = env_int("BENCH_LOAD_THREADS", os.cpu_count() or 2)
    a.load_rounds = env_int("BENCH_LOAD_ROUNDS", 3)
    a.ycsb_mongodb_records = env_int("BENCH_YCSB_MONGODB_RECORDS", 10_000)
    parts = os.environ.get(
        "BENCH_PARTS", "mariadb mysql postgres mariadb-tls postgres-tls tpcc tpch ycsb").split()

    started = datetime.datetime.now(datetime.timezone.utc)
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    out = {
        "schema_version": 1,
        "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "dbduel_commit": git_commit(),
        "host": {"cpu": model, "cores": os.cpu_count(), "kernel": os.uname().release},
        "settings": {"duration_s": a.duration, "rounds": a.rounds, "warmup_s": a.warmup,
                     "threads": a.threads, "order": "A B, then B A, alternating",
                     "jobs": a.jobs, "pg_jobs": a.pg_jobs},
        "peers": {
            "sysbench": tool_version(["sysbench", "--version"]),
            "pgbench": tool_version([pg_bin("pgbench"), "--version"]),
        },
    }
    log(f"vs-peers: {a.duration} s a run, threads {a.threads}, {a.rounds} round(s) of A B; "
        f"{os.cpu_count()} cores, {model}")
    b0 = host_cpu_s()
    time.sleep(2)
    b1 = host_cpu_s()
    out["machine_busy_before"] = (b1[0] - b0[0]) / max(b1[1] - b0[1], 1e-9)
    if out["machine_busy_before"] > 0.15:
        log(f"warning: the machine was {out['machine_busy_before']:.0%} busy before the bench "
            "started; other work disturbs these figures")
    if "mariadb" in parts:
        sysbench_part(a, out, "mariadb")
    if "mysql" in parts:
        sysbench_part(a, out, "mysql")
    if "postgres" in parts:
        postgres_part(a, out)
    if "mariadb-tls" in parts:
        sysbench_part(a, out, "mariadb-tls")
    if "postgres-tls" in parts:
        postgres_part(a, out, "postgres-tls")
    if "tpcc" in parts:
        tpcc_part(a, out)
    if "tpch" in parts:
        tpch_part(a, out)
    if "ycsb" in parts:
        for part in YCSB_SERVERS:
            ycsb_part(a, out, part)
    if "load" in parts:
        load_part(a, out, "mariadb")
        load_part(a, out, "mysql")
    # Each row names its server: the family and the version the sandbox reported.
    servers = {"mariadb": "mariadb", "mysql": "mysql", "postgres": "postgres",
               "mariadb-tls": "mariadb", "postgres-tls": "postgres", "tpcc": "mariadb",
               **{part: family for part, (family, _) in YCSB_SERVERS.items()}}
    def version(part):
        m = re.search(r"\d+(\.\d+)+", out[part].get("server_version") or "")
        return m.group(0) if m else "?"

    pairs = [{**p, "server": f"{servers[part]} {version(part)}"}
             for part in servers for p in out.get(part, {}).get("pairs", [])]
    out["finished_at"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = write_results(a.results, "vs-peers", started, out)
    if pairs:
        print()
        print_table(pairs)
    if "tpcc" in out:
        l = out["tpcc"]["load"]
        print(f"tpcc load of {out['tpcc']['warehouses']} warehouses: go-tpc prepare "
              f"{l['go_tpc_prepare_s']:.1f} s; dbduel {l['dbduel_generate_s'] + l['dbduel_load_s']:.1f} s "
              f"({l['dbduel_generate_s']:.1f} s generating, {l['dbduel_load_s']:.1f} s loading); "
              f"ratio {l['go_tpc_prepare_s'] / (l['dbduel_generate_s'] + l['dbduel_load_s']):.2f}× "
              "(above 1: dbduel faster)")
    if any(part in out for part in YCSB_SERVERS):
        print()
        print_ycsb_mixes(out)
    if "tpch" in out:
        print()
        print_tpch(out["tpch"])
    for key in ("mariadb-load", "mysql-load"):
        if key in out:
            print_load(key, out[key])
    print(f"raw results: {path}")


if __name__ == "__main__":
    main()
