//! MariaDB Galera clusters: a contender's `cluster = { nodes = N, … }` becomes N sandboxes on
//! loopback running as the `mysql` account — node 1 bootstraps a new cluster, the others join
//! it one at a time by rsync state transfer — and the `Clustered` capability over them:
//! clients spread over the nodes, each node's wsrep counters, checksums once the nodes agree.
//!
//! Each cluster has its own TLS (`sandbox::certs`: a CA made for it, a certificate for each
//! node): every node's group communication and incremental state transfer speak TLS with them
//! (`socket.ssl_*`) and its full state transfer goes through stunnel with them (`[sst]`,
//! `ssl-mode = VERIFY_CA`), each side verifying the other's chain against the cluster's CA. A
//! node that another account starts, even on the right ports and cluster name, cannot join,
//! receive a copy of the data or send the cluster a write set.

use crate::decode::{DecodeError, KeyPath};
use crate::engine::cluster::{Clustered, NodeStatus};
use crate::engine::replication::TableSum;
use crate::engine::target::Target;
use crate::engine::{EngineError, OpenCtx, Result, Session};
use crate::engines::mariadb::recipe::{GaleraNode, MariadbRecipe};
use crate::engines::mariadb::topology::{CHECKSUM_RULE, checksum_tables};
use crate::engines::mariadb::{conn_opts, crate_conn, my_err};
use crate::engines::members::{Member, Members};
use crate::engines::server::sandbox_err;
use crate::engines::server::{Guards, Server, SettingRules};
use mysql::prelude::Queryable;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Where a contender's clients connect.
const PLACEMENTS: &[&str] = &["round-robin", "one-node"];

/// Most nodes a cluster on one host may have.
const MAX_NODES: u32 = 9;

/// How long the cluster may take to have every node joined and synced.
const SYNC_TIMEOUT: Duration = Duration::from_secs(180);

/// `cluster = { … }` of a MariaDB contender.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GaleraOptions {
    /// Nodes, 2 to 9 (3 is the smallest cluster that goes on after losing one).
    pub nodes: u32,
    /// Where the study's clients connect: `round-robin` over the nodes (client i on node
    /// i mod N), or `one-node` (every client on node 1: a single writer, the others replicas
    /// that happen to be writable). Steps may place clients themselves (`nodes = K`).
    #[serde(default = "d_round_robin")]
    pub clients: String,
    /// `wsrep_slave_threads` on every node (the server's default, 1, when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slave_threads: Option<u64>,
    /// `wsrep_sync_wait` on every node: 0 (the default) reads without waiting for the
    /// cluster; 1 makes reads wait until the node has applied what was committed before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_wait: Option<u8>,
    /// Flow control: a node asks the others to pause when this many write sets wait in its
    /// receive queue (`gcs.fc_limit`; Galera's default 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_control_limit: Option<u64>,
    /// ... and lets them resume when the queue is back under this share of the limit
    /// (`gcs.fc_factor`, 0 to 1; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_control_factor: Option<f64>,
    /// Any other `wsrep_provider_options`, e.g. `{ "gcache.size" = "256M" }`.
    #[serde(default)]
    pub provider_options: toml::Table,
}

fn d_round_robin() -> String {
    "round-robin".into()
}

impl GaleraOptions {
    /// Check the options; `at` is the `cluster` table's place.
    pub fn validate(&self, at: &KeyPath) -> std::result::Result<(), DecodeError> {
        let err = |k: &str, m: String| Err(DecodeError::at(at.clone().key(k), m));
        if !(2..=MAX_NODES).contains(&self.nodes) {
            return err(
                "nodes",
                format!(
                    "nodes = {} is out of range; use 2 to {MAX_NODES} (3 is the smallest cluster that survives losing a node)",
                    self.nodes
                ),
            );
        }
        if !PLACEMENTS.contains(&self.clients.as_str()) {
            return err(
                "clients",
                format!(
                    "clients = {:?}; use one of: {}",
                    self.clients,
                    PLACEMENTS.join(", ")
                ),
            );
        }
        if self.sync_wait.is_some_and(|w| w > 15) {
            return err(
                "sync_wait",
                "sync_wait is wsrep_sync_wait, a bitmask from 0 to 15".into(),
            );
        }
        if self.slave_threads.is_some_and(|t| !(1..=512).contains(&t)) {
            return err(
                "slave_threads",
                "slave_threads is wsrep_slave_threads: 1 to 512".into(),
            );
        }
        if self
            .flow_control_limit
            .is_some_and(|l| !(1..=1_000_000).contains(&l))
        {
            return err(
                "flow_control_limit",
                "flow_control_limit is gcs.fc_limit: 1 to 1000000 write sets".into(),
            );
        }
        if self
            .flow_control_factor
            .is_some_and(|f| !(0.0..=1.0).contains(&f))
        {
            return err(
                "flow_control_factor",
                "flow_control_factor is gcs.fc_factor: 0 to 1".into(),
            );
        }
        self.provider_list(at).map(|_| ())
    }

    /// `wsrep_provider_options` beyond the addresses: the options above, then the table's,
    /// as `key=value`.
    fn provider_list(&self, at: &KeyPath) -> std::result::Result<Vec<String>, DecodeError> {
        // Group communication reports its replication latency every second, not every
        // minute, so a step of seconds has it.
        let mut out = vec!["evs.stats_report_period=PT1S".to_string()];
        if let Some(l) = self.flow_control_limit {
            out.push(format!("gcs.fc_limit={l}"));
        }
        if let Some(f) = self.flow_control_factor {
            out.push(format!("gcs.fc_factor={f}"));
        }
        for (k, v) in &self.provider_options {
            let value = crate::engines::server::setting_value(v, ("true", "false"));
            let name_ok = !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if let Some((owned, guards)) = PROVIDER_SETTINGS.owner_of(k).filter(|_| name_ok) {
                return Err(DecodeError::at(
                    at.clone().key("provider_options").key(k),
                    format!(
                        "{}: it sets {}; remove it",
                        crate::engines::server::owned_words(k, owned),
                        match guards {
                            Guards::Tls => "the cluster's TLS",
                            Guards::Files => "where the node keeps its files",
                            _ => "where the node listens for the cluster",
                        }
                    ),
                ));
            }
            match value {
                Some(v) if name_ok && !v.contains([';', '"', '\n']) => {
                    out.push(format!("{k}={v}"));
                }
                _ => {
                    return Err(DecodeError::at(
                        at.clone().key("provider_options").key(k),
                        "provider options are dotted names (gcs.fc_limit) with a string, number or boolean without ; or quotes".to_string(),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// The `[mysqld]` settings every node gets from these options.
    pub fn server_settings(&self) -> Vec<(String, String)> {
        let mut s = Vec::new();
        if let Some(t) = self.slave_threads {
            s.push(("wsrep_slave_threads".into(), t.to_string()));
        }
        if let Some(w) = self.sync_wait {
            s.push(("wsrep_sync_wait".into(), w.to_string()));
        }
        s
    }

    /// Each node's part: names, ports (three free loopback ports a node, none twice) and
    /// the cluster's addresses; node 1 bootstraps.
    pub fn plan(&self, contender: &str) -> Result<Vec<GaleraNode>> {
        let mut taken = Vec::new();
        let mut pick = || -> Result<u16> {
            loop {
                let p = crate::sandbox::free_port().map_err(sandbox_err)?;
                if !taken.contains(&p) {
                    taken.push(p);
                    return Ok(p);
                }
            }
        };
        let mut ports = Vec::new();
        for _ in 0..self.nodes {
            ports.push((pick()?, pick()?, pick()?));
        }
        let peers: Vec<u16> = ports.iter().map(|p| p.0).collect();
        let provider = self
            .provider_list(&KeyPath::root())
            .map_err(|e| EngineError::new("usage", e.message))?;
        let cluster_name = format!("dbduel-{contender}");
        let tls = crate::sandbox::certs::make(&cluster_name, ports.len())
            .map_err(|m| EngineError::new("tls", m))?;
        Ok(ports
            .iter()
            .zip(tls)
            .enumerate()
            .map(|(i, (&(gcomm, ist, sst), tls))| GaleraNode {
                cluster_name: cluster_name.clone(),
                node_name: node_name(i),
                peers: peers.clone(),
                gcomm_port: gcomm,
                ist_port: ist,
                sst_port: sst,
                bootstrap: i == 0,
                provider_options: provider.clone(),
                tls,
            })
            .collect())
    }
}

/// `node-1`, `node-2`, …
fn node_name(i: usize) -> String {
    format!("node-{}", i + 1)
}

/// A Galera cluster's nodes: node 1 is the contender's own server (its engine's), the rest
/// are members here.
pub struct GaleraCluster {
    database: String,
    timeout_s: u64,
    /// Node 1's server process (a cluster is not restarted, so it stays).
    first_pid: Option<i32>,
    /// When node 1's server started: `kill_node` signals its pid only while it is still
    /// that process (never after it was stopped and reaped, when the pid may be anyone's).
    first_stamp: Option<crate::sandbox::process::ProcessStamp>,
    /// Node 1's reach as `primary`; nodes 2.. in order.
    members: Members<mysql::Conn>,
    one_node: bool,
    /// The next client's node, round robin.
    next: AtomicUsize,
    /// The provider options the study set, read back into the manifest.
    provider_keys: Vec<String>,
}

impl GaleraCluster {
    /// Start the `others` (nodes 2.., each with `base`'s settings) one at a time, each
    /// joining by a full state transfer, then wait until every node is synced in a cluster
    /// of all of them. `first` is node 1, already bootstrapped.
    pub fn join(
        opts: &GaleraOptions,
        first: &Server,
        first_reach: &Target,
        base: &MariadbRecipe,
        others: Vec<GaleraNode>,
        ctx: &OpenCtx<'_>,
        timeout_s: u64,
    ) -> Result<GaleraCluster> {
        let n = others.len() + 1;
        if let Some(mut sb) = first.sandbox() {
            sb.set_role(&format!("node-1 of a {n}-node Galera cluster"))
                .map_err(sandbox_err)?;
        }
        let mut list: Vec<Member> = Vec::with_capacity(others.len());
        // A node that cannot join fails the cluster: the nodes already joined are stopped
        // and removed before the error goes up (node 1 is the caller's).
        let fail = |list: Vec<Member>, e: EngineError| {
            for m in list {
                let _ = m.server.finish(false);
            }
            Err(e)
        };
        // A joiner's accounts come from node 1 by state transfer: so does its secret.
        let secret = match first.sandbox().map(|sb| sb.secret()) {
            Some(Ok(s)) => Some(s),
            Some(Err(e)) => return Err(sandbox_err(e)),
            None => None,
        };
        for node in others {
            let name = node.node_name.clone();
            let recipe = MariadbRecipe {
                galera: Some(node),
                secret: secret.clone(),
                ..base.clone()
            };
            let p = match Server::provision(
                None,
                Box::new(recipe),
                &format!("{}/{name}", ctx.contender),
                &ctx.dir.join("nodes").join(&name),
                "mysql",
                "root",
            ) {
                Ok(p) => p,
                Err(e) => return fail(list, e),
            };
            let role = p.server.sandbox().map(|mut sb| {
                sb.set_role(&format!("{name} of a {n}-node Galera cluster"))
                    .map_err(sandbox_err)
            });
            list.push(Member {
                name,
                server: p.server,
                reach: p.reach,
            });
            if let Some(Err(e)) = role {
                return fail(list, e);
            }
        }
        let cluster = GaleraCluster {
            database: ctx.database.to_string(),
            timeout_s,
            first_pid: first.pid(),
            first_stamp: first
                .sandbox()
                .and_then(|sb| sb.process())
                .map(|(_, stamp)| stamp),
            members: Members::new(first_reach.clone(), list),
            one_node: opts.clients == "one-node",
            next: AtomicUsize::new(0),
            provider_keys: opts.provider_options.keys().cloned().collect(),
        };
        if let Err(e) = cluster.wait_synced() {
            let _ = cluster.finish(false);
            return Err(e);
        }
        Ok(cluster)
    }

    /// Wait until every node sees a cluster of all of them and says `Synced`.
    fn wait_synced(&self) -> Result<()> {
        let n = self.node_count();
        let deadline = Instant::now() + SYNC_TIMEOUT;
        loop {
            let states: Vec<Result<NodeStatus>> = (0..n).map(|i| self.node_status(i)).collect();
            let synced = states.iter().all(|s| {
                s.as_ref()
                    .is_ok_and(|s| s.cluster_size == n as u64 && s.state == "Synced")
            });
            if synced {
                return Ok(());
            }
            if let Some(i) = (0..n).find(|&i| self.node_gone(i).is_some()) {
                return Err(EngineError::new(
                    "sandbox",
                    format!(
                        "{} of the Galera cluster died while joining: {}",
                        self.node_name(i),
                        self.node_gone(i).unwrap_or_default()
                    ),
                ));
            }
            // A stop asked for meanwhile: the nodes are stopped, not waited for.
            if crate::stop::requested() {
                return Err(EngineError::new("sandbox", crate::stop::INTERRUPTED));
            }
            if Instant::now() > deadline {
                let seen: Vec<String> = states
                    .iter()
                    .enumerate()
                    .map(|(i, s)| match s {
                        Ok(s) => format!(
                            "{}: {} in a cluster of {}",
                            self.node_name(i),
                            s.state,
                            s.cluster_size
                        ),
                        Err(e) => format!("{}: {}", self.node_name(i), e.message),
                    })
                    .collect();
                return Err(EngineError::new(
                    "sandbox",
                    format!(
                        "the Galera cluster was not synced after {} s ({}); the nodes' logs say why",
                        SYNC_TIMEOUT.as_secs(),
                        seen.join("; ")
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Node `i`'s reach (0 is node 1).
    fn reach(&self, node: usize) -> Result<&Target> {
        match node {
            0 => Ok(&self.members.primary),
            i => self.members.get(i - 1).map(|m| &m.reach),
        }
    }

    /// Where the next client of `Engine::connect` goes: round robin over the nodes, or node 1.
    pub fn next_client_reach(&self) -> &Target {
        if self.one_node {
            return &self.members.primary;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.node_count();
        self.reach(i).unwrap_or(&self.members.primary)
    }

    /// How clients are placed, in words for the manifest.
    pub fn placement(&self) -> &'static str {
        if self.one_node {
            "one-node"
        } else {
            "round-robin"
        }
    }

    fn admin<T>(
        &self,
        node: usize,
        f: impl FnOnce(&mut mysql::Conn) -> mysql::Result<T>,
    ) -> Result<T> {
        let timeout_s = self.timeout_s;
        let member = node.checked_sub(1);
        self.members.admin(
            member,
            |reach| crate_conn(conn_opts(reach, None, timeout_s)),
            f,
            my_err,
        )
    }

    /// Settings every node must share, read back from each (`node-2.wsrep_slave_threads`).
    pub fn settings(&self) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for i in 0..self.node_count() {
            let rows: Vec<(String, String)> = self.admin(i, |c| {
                c.query(
                    "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('wsrep_slave_threads', 'wsrep_sync_wait', \
                     'wsrep_sst_method', 'wsrep_cluster_name', 'wsrep_provider_options', 'binlog_format', \
                     'innodb_autoinc_lock_mode', 'innodb_flush_log_at_trx_commit', 'wsrep_retry_autocommit')",
                )
            })?;
            for (k, v) in rows {
                if k == "wsrep_provider_options" {
                    // A long list; the ones a study sets, and flow control's, are the point.
                    for opt in v.split(';') {
                        let Some((name, value)) = opt.split_once('=') else {
                            continue;
                        };
                        let name = name.trim();
                        if matches!(
                            name,
                            "gcs.fc_limit"
                                | "gcs.fc_factor"
                                | "evs.stats_report_period"
                                | "gcache.size"
                        ) || self.provider_keys.iter().any(|k| k == name)
                        {
                            out.push((
                                format!("{}.{name}", self.node_name(i)),
                                value.trim().to_string(),
                            ));
                        }
                    }
                } else {
                    out.push((format!("{}.{k}", self.node_name(i)), v));
                }
            }
            let version: Option<String> = self.admin(i, |c| {
                c.query_first("SHOW GLOBAL STATUS LIKE 'wsrep_provider_version'")
                    .map(|r: Option<(String, String)>| r.map(|(_, v)| v))
            })?;
            if let Some(v) = version {
                out.push((format!("{}.wsrep_provider_version", self.node_name(i)), v));
            }
        }
        out.push(("cluster.clients".into(), self.placement().into()));
        Ok(out)
    }

    /// The rows of `sql` (a `SHOW GLOBAL STATUS …`) from every node, one after another (the
    /// caller sums them); `None` once a node is gone, whose counts can no longer be read — a
    /// sum over fewer nodes than before would look like a step that undid work.
    pub fn status_sum(&self, sql: &str) -> Result<Option<Vec<(String, String)>>> {
        if (0..self.node_count()).any(|i| self.node_gone(i).is_some()) {
            return Ok(None);
        }
        let mut rows = Vec::new();
        for i in 0..self.node_count() {
            rows.extend(self.admin(i, |c| c.query::<(String, String), _>(sql))?);
        }
        Ok(Some(rows))
    }

    /// Stop nodes 2.. and remove their sandboxes (or keep them with `keep`). Node 1 is the
    /// engine's own server, finished after them (so the last node to stop is the most
    /// advanced, and a kept cluster restarts from it).
    pub fn finish(self, keep: bool) -> Result<()> {
        self.members.finish(keep)
    }
}

/// A `SHOW GLOBAL STATUS LIKE 'wsrep%'` row set as a node's status.
fn node_status(rows: &[(String, String)]) -> NodeStatus {
    let get = |k: &str| {
        rows.iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.as_str())
    };
    let n = |k: &str| get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let latency = get("wsrep_evs_repl_latency").and_then(|v| {
        let parts: Vec<&str> = v.split('/').collect();
        let samples = parts.get(4)?.trim().parse::<u64>().ok()?;
        (samples > 0).then(|| parts.get(1)?.trim().parse::<f64>().ok())?
    });
    NodeStatus {
        cluster_size: n("wsrep_cluster_size"),
        state: get("wsrep_local_state_comment").unwrap_or("").to_string(),
        ready: get("wsrep_ready") == Some("ON"),
        last_committed: n("wsrep_last_committed"),
        cert_failures: n("wsrep_local_cert_failures"),
        bf_aborts: n("wsrep_local_bf_aborts"),
        replicated: n("wsrep_replicated"),
        replicated_bytes: n("wsrep_replicated_bytes"),
        received: n("wsrep_received"),
        received_bytes: n("wsrep_received_bytes"),
        flow_control_paused_ns: n("wsrep_flow_control_paused_ns"),
        flow_control_sent: n("wsrep_flow_control_sent"),
        recv_queue: n("wsrep_local_recv_queue"),
        repl_latency_s: latency,
    }
}

impl Clustered for GaleraCluster {
    fn node_count(&self) -> usize {
        self.members.list.len() + 1
    }

    fn client_nodes(&self) -> usize {
        if self.one_node { 1 } else { self.node_count() }
    }

    fn node_name(&self, node: usize) -> String {
        node_name(node)
    }

    fn node_pid(&self, node: usize) -> Option<i32> {
        match node {
            0 => self.first_pid,
            i => self.members.pid(i - 1),
        }
    }

    fn node_gone(&self, node: usize) -> Option<String> {
        match node {
            0 => self
                .first_pid
                .filter(|&p| !crate::sandbox::alive(p))
                .map(|p| format!("pid {p} is gone")),
            i => self.members.gone_of(i - 1),
        }
    }

    fn node_session(&self, node: usize) -> Result<Box<dyn Session>> {
        crate::engines::mariadb::session_at(
            self.reach(node)?,
            &self.database,
            self.timeout_s,
            "mariadb",
        )
    }

    fn causal_session(&self, node: usize) -> Result<Box<dyn Session>> {
        let mut s = self.node_session(node)?;
        // 1: reads (SELECT, SHOW, BEGIN) wait for the node to catch up with the cluster
        s.execute("SET SESSION wsrep_sync_wait = 1")?;
        Ok(s)
    }

    fn node_status(&self, node: usize) -> Result<NodeStatus> {
        let rows: Vec<(String, String)> =
            self.admin(node, |c| c.query("SHOW GLOBAL STATUS LIKE 'wsrep%'"))?;
        Ok(node_status(&rows))
    }

    fn checksums(&self, node: usize) -> Result<Vec<TableSum>> {
        self.admin(node, |c| checksum_tables(c, &self.database))
    }

    fn checksum_rule(&self) -> &'static str {
        CHECKSUM_RULE
    }

    /// SIGKILL a node's server. Nodes 2.. are asked through their sandbox, which keeps a pid
    /// only until it has reaped the server; node 1's pid, kept here, is signalled only while
    /// it is still the process that started then.
    fn kill_node(&self, node: usize) -> Result<()> {
        let not_running =
            || EngineError::new("usage", format!("{} is not running", node_name(node)));
        let pid = self.node_pid(node).ok_or_else(not_running)?;
        if node == 0 {
            let stamp = self.first_stamp.as_ref().ok_or_else(not_running)?;
            if !crate::sandbox::process::signal_if_same(pid, stamp, libc::SIGKILL) {
                return Err(not_running());
            }
        } else {
            crate::sandbox::signal(pid, libc::SIGKILL);
        }
        Ok(())
    }
}

/// Galera's provider options dbduel owns (`wsrep_provider_options`): where a node listens
/// for the cluster (`gmcast.*`, `ist.*`, `base_*`), its TLS (`socket.*`) and its files
/// (`gcache.dir`, `gcache.name`). Galera's names are dotted and taken whole.
const PROVIDER_SETTINGS: SettingRules = SettingRules {
    punct: ".",
    on_off: ("true", "false"),
    owned: &[
        ("gmcast.*", Guards::Listeners),
        ("ist.*", Guards::Listeners),
        ("base_host", Guards::Listeners),
        ("base_port", Guards::Listeners),
        ("base_dir", Guards::Files),
        ("gcache.dir", Guards::Files),
        ("gcache.name", Guards::Files),
        ("socket.*", Guards::Tls),
    ],
    option_prefixes: &[],
    abbreviations: false,
    exact_names: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(text: &str) -> GaleraOptions {
        toml::from_str(text).expect("options")
    }

    #[test]
    fn options_are_checked_with_their_place() {
        let msg = |e: DecodeError| e.message;
        let at = KeyPath::root().key("options").key("cluster");
        assert!(opts("nodes = 3").validate(&at).is_ok());
        let e = msg(opts("nodes = 1").validate(&at).expect_err("one node"));
        assert!(e.contains("2 to 9"), "{e}");
        let e = msg(opts("nodes = 3\nclients = \"random\"")
            .validate(&at)
            .expect_err("placement"));
        assert!(e.contains("round-robin, one-node"), "{e}");
        let e = opts("nodes = 3\nprovider_options = { \"gcs.fc_limit\" = \"1; x=y\" }")
            .validate(&at)
            .expect_err("injection");
        assert_eq!(
            e.path.to_string(),
            "options.cluster.provider_options.gcs.fc_limit"
        );
        assert!(e.message.contains("without ;"), "{}", e.message);
    }

    #[test]
    fn every_node_gets_its_own_ports_and_the_whole_address_list() {
        let o = opts(
            "nodes = 3\nflow_control_limit = 64\nprovider_options = { \"gcache.size\" = \"64M\" }",
        );
        let plan = o.plan("galera-3").expect("plan");
        assert_eq!(plan.len(), 3);
        assert!(plan[0].bootstrap && !plan[1].bootstrap && !plan[2].bootstrap);
        let mut ports: Vec<u16> = plan
            .iter()
            .flat_map(|n| [n.gcomm_port, n.ist_port, n.sst_port])
            .collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 9, "no port twice");
        for n in &plan {
            assert_eq!(
                n.peers,
                plan.iter().map(|n| n.gcomm_port).collect::<Vec<_>>()
            );
            assert!(n.provider_options.contains(&"gcs.fc_limit=64".to_string()));
            assert!(n.provider_options.contains(&"gcache.size=64M".to_string()));
        }
        assert_eq!(plan[2].node_name, "node-3");
    }

    #[test]
    fn status_rows_become_a_node_status() {
        let rows: Vec<(String, String)> = [
            ("wsrep_cluster_size", "3"),
            ("wsrep_local_state_comment", "Synced"),
            ("wsrep_ready", "ON"),
            ("wsrep_local_cert_failures", "17"),
            ("wsrep_local_bf_aborts", "25"),
            ("wsrep_replicated_bytes", "4096"),
            ("wsrep_flow_control_paused_ns", "1500000000"),
            (
                "wsrep_evs_repl_latency",
                "0.000199/0.000394/0.00112/0.000211/187",
            ),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let s = node_status(&rows);
        assert_eq!(s.cluster_size, 3);
        assert_eq!(s.state, "Synced");
        assert!(s.ready);
        assert_eq!((s.cert_failures, s.bf_aborts), (17, 25));
        assert_eq!(s.flow_control_paused_ns, 1_500_000_000);
        assert_eq!(s.repl_latency_s, Some(0.000394));
        let none = node_status(&[(
            "wsrep_evs_repl_latency".to_string(),
            "0/0/0/0/0".to_string(),
        )]);
        assert_eq!(none.repl_latency_s, None, "no samples, no latency");
    }
}
