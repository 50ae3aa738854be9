# Sourced by bench/vs-peers and bench/footprint: installs the peers and the servers, builds
# dbduel (release) into $dbduel, makes a work directory $work, and on exit removes every
# sandbox started under it, however the bench exits.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# The peers: Debian's sysbench 1.0, and pgbench with the PostgreSQL server packages.
if ! command -v sysbench >/dev/null 2>&1; then
    echo "installing sysbench" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sysbench >/dev/null
fi
# GNU time measures each client's peak RSS (bench/footprint).
if [ ! -x /usr/bin/time ]; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
fi
# MariaDB and PostgreSQL (pgbench ships with the server), and the server cache (MySQL 8.0):
# installed only when missing.
bash scripts/install-servers >&2
# go-tpc, the TPC-C and TPC-H peer: built once from the Go module proxy, when the tpcc or
# the tpch pair runs.
case " ${BENCH_PARTS:-tpcc} " in
    *" tpcc "* | *" tpch "*) bash scripts/install-go-tpc >&2 ;;
esac
# go-ycsb, the ycsb pairs' peer, and FerretDB, their MongoDB-wire server: each built once
# from the Go module proxy, when they run (in the default parts).
case " ${BENCH_PARTS:-ycsb} " in
    *" ycsb "*) bash scripts/install-go-ycsb >&2 && bash scripts/install-ferretdb >&2 ;;
esac
sysbench --version | grep -q '^sysbench 1\.0' || {
    echo "error: bench/vs-peers compares against sysbench 1.0; found: $(sysbench --version)" >&2
    exit 3
}

echo "building dbduel (release)" >&2
cargo build --release --locked -q
dbduel="${CARGO_TARGET_DIR:-$root/target}/release/dbduel"

work=$(mktemp -d "${TMPDIR:-/tmp}/dbduel-bench.XXXXXX")
# Is PID still the process that started at START (clock ticks after boot), and not a zombie?
running() {
    local now
    # state and start time, read after the command name (which may hold spaces)
    now=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $1, $20}') || return 1
    [ -n "$now" ] && [ "${now#* }" = "$2" ] && [ "${now%% *}" != Z ]
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    # The sandboxes were provisioned under $work/sandboxes: stop and remove every one.
    "$dbduel" sandbox down --all --out "$work/sandboxes" >/dev/null 2>&1 || true
    # Belt and braces: any server recorded as started here that still runs is stopped by its
    # pid (only if the pid still names the same process) and its private directory removed.
    if [ -f "$work/servers" ]; then
        while read -r pid start private; do
            if running "$pid" "$start"; then
                echo "warning: stopping server $pid left running" >&2
                kill -TERM "$pid" 2>/dev/null || true
                for _ in $(seq 1 100); do running "$pid" "$start" || break; sleep 0.1; done
                running "$pid" "$start" && kill -KILL "$pid" 2>/dev/null
            fi
            if [ "$private" != "-" ] && [ -d "$private" ]; then rm -rf "$private"; fi
        done < "$work/servers"
    fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

