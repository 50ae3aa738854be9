//! The cluster capability: a contender that is several servers all taking writes (a Galera
//! cluster) answers `Engine::cluster()` with this. Sessions from `Engine::connect` are spread
//! over the nodes as the contender says; steps that place clients themselves, read each
//! node's replication counters or compare the nodes' contents come here.

use super::replication::TableSum;
use super::{Result, Session};
use serde::Serialize;

/// One node's replication state and counters, read from the node. Counters count from the
/// node's start; a step takes differences.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NodeStatus {
    /// Members of the cluster as this node sees it (`wsrep_cluster_size`).
    pub cluster_size: u64,
    /// The node's state in its own words (`Synced`, `Donor/Desynced`, `Joining`, …).
    pub state: String,
    /// Is it in the primary component, taking queries (`wsrep_ready`)?
    pub ready: bool,
    /// The last transaction it committed, by the cluster's sequence number
    /// (`wsrep_last_committed`): equal on every node once all have applied everything.
    pub last_committed: u64,
    /// Transactions from its own clients that failed certification against another node's
    /// (`wsrep_local_cert_failures`).
    pub cert_failures: u64,
    /// Its clients' transactions aborted by a replicated transaction that won the row
    /// (`wsrep_local_bf_aborts`, brute-force aborts; the client sees a deadlock).
    pub bf_aborts: u64,
    /// Write sets it replicated to the others, and their bytes (`wsrep_replicated`,
    /// `wsrep_replicated_bytes`).
    pub replicated: u64,
    pub replicated_bytes: u64,
    /// Write sets it received from the others, and their bytes.
    pub received: u64,
    pub received_bytes: u64,
    /// Nanoseconds replication was paused by flow control since the node started
    /// (`wsrep_flow_control_paused_ns`).
    pub flow_control_paused_ns: u64,
    /// Flow-control pauses this node asked for (`wsrep_flow_control_sent`).
    pub flow_control_sent: u64,
    /// Write sets received and waiting to be applied (`wsrep_local_recv_queue`).
    pub recv_queue: u64,
    /// Group communication's replication latency, the mean over its last report period,
    /// seconds (the second of `wsrep_evs_repl_latency`'s min/avg/max/stddev/samples), when
    /// it has samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repl_latency_s: Option<f64>,
}

/// A cluster's nodes, as steps use them. Nodes are numbered from 0 in the order started (node
/// 0 bootstrapped the cluster and holds dbduel's administrative connections).
pub trait Clustered: Send + Sync {
    fn node_count(&self) -> usize;
    /// How many nodes (the first ones) the contender spreads its clients over.
    fn client_nodes(&self) -> usize;
    /// `node-1`, `node-2`, … as reports name them.
    fn node_name(&self, node: usize) -> String;
    /// The node's server process, for CPU sampling and faults.
    fn node_pid(&self, node: usize) -> Option<i32>;
    /// If the node's server process ended, how.
    fn node_gone(&self, node: usize) -> Option<String>;
    /// A client session on `node`, for a step that places its clients itself.
    fn node_session(&self, node: usize) -> Result<Box<dyn Session>>;
    /// A session on `node` whose every read first waits until the node has applied all that
    /// the cluster committed before it (a causal read): for a check that must see every
    /// write, whichever node took it.
    fn causal_session(&self, node: usize) -> Result<Box<dyn Session>>;
    /// The node's state and counters now (one round trip).
    fn node_status(&self, node: usize) -> Result<NodeStatus>;
    /// Checksums of every table in the study's database on `node`, sorted by table.
    fn checksums(&self, node: usize) -> Result<Vec<TableSum>>;
    /// How checksums are computed, in words for the report.
    fn checksum_rule(&self) -> &'static str;
    /// Kill the node's server outright (SIGKILL), as a crash would: for fault steps.
    fn kill_node(&self, node: usize) -> Result<()>;
    /// What every node must share before its checksums mean anything, in words.
    fn settled_rule(&self) -> &'static str {
        "every live node has committed the same last transaction and has nothing queued"
    }
}

/// Have the live nodes (those whose status could be read) all committed the same last
/// transaction, with nothing waiting to be applied?
pub fn settled(statuses: &[Option<NodeStatus>]) -> bool {
    let live: Vec<&NodeStatus> = statuses.iter().flatten().collect();
    let Some(first) = live.first() else {
        return false;
    };
    live.iter()
        .all(|s| s.last_committed == first.last_committed && s.recv_queue == 0)
}

/// A failover on a cluster: its last node's server is killed under writes (never node 0's,
/// which holds dbduel's administration), and there is nothing to promote — every node takes
/// writes. Timed until node 0 is in a primary component without the lost node (its view has
/// one member fewer, `wsrep_ready` on); each survivor's last committed sequence number is what
/// it had received.
pub fn lose_node(c: &dyn Clustered) -> Result<super::FailoverOutcome> {
    let n = c.node_count();
    if n < 3 {
        return Err(super::EngineError::new(
            "unsupported",
            "a cluster of two nodes loses its quorum with either: a failover needs three nodes or more",
        ));
    }
    let victim = n - 1;
    let killed = std::time::Instant::now();
    c.kill_node(victim)?;
    let deadline = killed + std::time::Duration::from_secs(60);
    let view = loop {
        match c.node_status(0) {
            Ok(s) if s.ready && s.cluster_size == n as u64 - 1 => break s,
            _ if std::time::Instant::now() > deadline => {
                return Err(super::EngineError::new(
                    "cluster",
                    format!(
                        "{} did not leave {} out of its view within 60 s",
                        c.node_name(0),
                        c.node_name(victim)
                    ),
                ));
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    };
    let settled_s = killed.elapsed().as_secs_f64();
    let mut received = vec![(c.node_name(0), format!("seqno {}", view.last_committed))];
    for i in 1..victim {
        if let Ok(s) = c.node_status(i) {
            received.push((c.node_name(i), format!("seqno {}", s.last_committed)));
        }
    }
    Ok(super::FailoverOutcome {
        promoted: 0,
        promoted_name: c.node_name(0),
        received,
        caught_up_s: settled_s,
        promoted_s: settled_s,
        commands: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(last: u64, queue: u64) -> Option<NodeStatus> {
        Some(NodeStatus {
            last_committed: last,
            recv_queue: queue,
            ..NodeStatus::default()
        })
    }

    #[test]
    fn a_cluster_is_settled_when_its_live_nodes_agree_and_nothing_waits() {
        assert!(settled(&[node(7, 0), node(7, 0), None]));
        assert!(!settled(&[node(7, 0), node(6, 0)]));
        assert!(!settled(&[node(7, 0), node(7, 2)]));
        assert!(!settled(&[None, None]));
    }
}
