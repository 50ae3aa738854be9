# The README's two commands: `make demo` (build, then run the default study on SQLite) and
# `make test` (install what the tests need, then format, lint, unit and end-to-end tests).
# `make test-fast` is the tier for every change: no install, no server (tests/README.md).

CARGO ?= cargo
# where cargo puts what it builds: CARGO_TARGET_DIR when it is set, else target/
DBDUEL := $(or $(CARGO_TARGET_DIR),target)/release/dbduel

.PHONY: demo build test test-fast lint fmt install-servers install-browser install-slurm install-k8s-schema bench clean

# The first command: dbduel without its server engines (the `servers` feature; about half the
# build, docs/commands.md), then the default study on SQLite. `make build` builds every engine.
demo:
	$(CARGO) build --release --locked --no-default-features
	$(DBDUEL) run shootout

build:
	$(CARGO) build --release --locked

# Servers the end-to-end tests run against (idempotent; installs only what is missing):
# MariaDB and PostgreSQL from Debian's packages, FerretDB built once from the Go module proxy;
# and Prometheus (Debian's), which scrapes a live run in tests/metrics.rs.
install-servers:
	bash scripts/install-servers
	bash scripts/install-ferretdb
	bash scripts/install-prometheus

# The browser the HTML report's test renders pages in (idempotent, like install-servers).
install-browser:
	bash scripts/install-browser

# Slurm and munge, for the test that submits a sharded run as an array job to a private
# one-node cluster on loopback (idempotent, like install-servers).
install-slurm:
	bash scripts/slurm-local install

# The Kubernetes API's schema (the version k8s-openapi is pinned to) that what `dbduel k8s`
# prints is validated against, from PyPI's kubernetes-validate, checksummed (idempotent).
install-k8s-schema:
	bash scripts/k8s-schema install

lint:
	scripts/ensure-rust-components
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings
	$(CARGO) clippy --lib --bins --locked --no-default-features -- -D warnings

test: install-servers install-browser install-slurm install-k8s-schema lint
	$(CARGO) test --locked

# The integration tests that need no database server: they run SQLite, the dry engine or
# the fixture runs. DBDUEL_SKIP_SERVERS=1 makes the few tests among them that would start a
# server (faults.rs's on MariaDB) skip even where one is installed.
FAST_TESTS := study_errors reports repeats e2e_sqlite faults queries_params footprint history

# Format, lint, unit tests and FAST_TESTS: a few minutes, nothing to install.
test-fast: lint
	DBDUEL_SKIP_SERVERS=1 $(CARGO) test --locked --lib $(addprefix --test ,$(FAST_TESTS))

# dbduel's client against sysbench (MariaDB, MySQL 8.0), pgbench and go-tpc on the same servers, as ratios from one run;
# its memory and CPU against mysqlslap and pgbench at 100 and 1,000 clients; what the live
# metrics endpoint costs a run and how long a scrape of a 1,000-client step takes; the dataset
# generators' rows/s (bench/README.md). Minutes; BENCH_DURATION_S=3 BENCH_ROUNDS=1 for a
# smoke run.
bench:
	bash bench/vs-peers
	bash bench/footprint
	bash bench/metrics
	$(CARGO) bench --locked --bench generators

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
	rm -rf dbduel-results
