//! A Galera cluster's own TLS: a certificate authority made for one cluster, and a key and
//! certificate it signs for each node (for 127.0.0.1 and `localhost`). Every node's group
//! communication and incremental state transfer speak TLS with them (`socket.ssl_*`) and its
//! full state transfer goes through stunnel with them (`[sst]`, `ssl-mode = VERIFY_CA`), and
//! each side verifies the other's chain against the cluster's CA: a node that another
//! account starts, even on the right ports and cluster name, cannot join, receive a copy of
//! the data or send the cluster a write set. The CA's key is dropped once the nodes' are
//! signed; nothing here is ever written into a manifest or a result.

use crate::engine::{EngineError, Result};
use crate::sandbox::{Layout, ServiceUser, secret};
use std::path::PathBuf;

/// File names, in a node's server directory (its account's, 0600).
const CA: &str = "galera-ca.pem";
const CERT: &str = "galera-cert.pem";
const KEY: &str = "galera-key.pem";

/// One node's TLS material, as PEM text.
#[derive(Clone)]
pub struct NodeTls {
    ca: String,
    cert: String,
    key: String,
}

impl std::fmt::Debug for NodeTls {
    /// Never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeTls { .. }")
    }
}

/// Where a node's TLS files are, once written.
pub struct Files {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn tls_err(e: rcgen::Error) -> EngineError {
    EngineError::new(
        "tls",
        format!("cannot make the Galera cluster's certificates: {e}"),
    )
}

/// A new CA for the cluster `name` and a certificate of each of its `nodes`.
pub fn for_cluster(name: &str, nodes: usize) -> Result<Vec<NodeTls>> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().map_err(tls_err)?;
    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("{name}-ca"));
    let ca = ca_params.self_signed(&ca_key).map_err(tls_err)?;
    (0..nodes)
        .map(|i| {
            let key = KeyPair::generate().map_err(tls_err)?;
            let mut p = CertificateParams::default();
            p.distinguished_name
                // No space: the state transfer's script passes it as `CN:secret@host`.
                .push(DnType::CommonName, format!("{name}-node-{}", i + 1));
            p.subject_alt_names = vec![
                SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()),
                SanType::DnsName("localhost".try_into().map_err(tls_err)?),
            ];
            let cert = p.signed_by(&key, &ca, &ca_key).map_err(tls_err)?;
            Ok(NodeTls {
                ca: ca.pem(),
                cert: cert.pem(),
                key: key.serialize_pem(),
            })
        })
        .collect()
}

impl NodeTls {
    /// The files' paths in `l`'s server directory.
    pub fn files(l: &Layout) -> Files {
        Self::files_in(l.server_dir())
    }

    /// The files' paths in directory `d`.
    pub fn files_in(d: &std::path::Path) -> Files {
        Files {
            ca: d.join(CA),
            cert: d.join(CERT),
            key: d.join(KEY),
        }
    }

    /// Write the node's files (0600, `owner`'s) into directory `d` (a node's server
    /// directory).
    pub fn write_in(
        &self,
        d: &std::path::Path,
        owner: Option<&ServiceUser>,
    ) -> crate::sandbox::Result<()> {
        let f = Self::files_in(d);
        secret::write_private_for(&f.ca, &self.ca, owner)?;
        secret::write_private_for(&f.cert, &self.cert, owner)?;
        secret::write_private_for(&f.key, &self.key, owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_gets_its_own_key_under_one_ca_per_cluster() {
        let a = for_cluster("dbduel-a", 3).expect("made");
        assert_eq!(a.len(), 3);
        assert!(a.iter().all(|n| n.ca == a[0].ca), "one CA a cluster");
        assert_ne!(a[0].key, a[1].key, "a key a node");
        assert!(a[0].cert.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(a[0].key.contains("PRIVATE KEY"));
        let b = for_cluster("dbduel-b", 1).expect("made");
        assert_ne!(a[0].ca, b[0].ca, "another cluster, another CA");
        assert_eq!(format!("{:?}", a[0]), "NodeTls { .. }");
    }
}
