//! Certificates dbduel makes for its own servers: a certificate authority made for one
//! sandbox (or one Galera cluster) and a key and certificate it signs for each server, for
//! 127.0.0.1 and `localhost`. The CA's key is dropped once the servers' are signed, so
//! nothing else can ever be signed under it; the files are root's, readable by the server's account and no other; no
//! key is ever written into a manifest or a result.

use super::{ServiceUser, secret};
use std::path::{Path, PathBuf};

/// One server's TLS material, as PEM text.
#[derive(Clone)]
pub struct ServerCerts {
    ca: String,
    cert: String,
    key: String,
}

impl std::fmt::Debug for ServerCerts {
    /// Never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerCerts { .. }")
    }
}

/// Where a server's TLS files are, once written.
#[derive(Debug, Clone)]
pub struct Files {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Files {
    /// `{prefix}-ca.pem`, `{prefix}-cert.pem` and `{prefix}-key.pem` in directory `d`.
    pub fn in_dir(d: &Path, prefix: &str) -> Files {
        Files {
            ca: d.join(format!("{prefix}-ca.pem")),
            cert: d.join(format!("{prefix}-cert.pem")),
            key: d.join(format!("{prefix}-key.pem")),
        }
    }
}

/// A new CA named `name` and a certificate of each of `servers` servers under it; their
/// common names are `{name}-node-N` (no space: Galera's state transfer passes one as
/// `CN:secret@host`).
#[cfg(feature = "servers")]
pub fn make(name: &str, servers: usize) -> Result<Vec<ServerCerts>, String> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
    let err = |e: rcgen::Error| format!("cannot make the certificates of {name}: {e}");
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("{name}-ca"));
    let ca = ca_params.self_signed(&ca_key).map_err(err)?;
    (0..servers)
        .map(|i| {
            let key = KeyPair::generate().map_err(err)?;
            let mut p = CertificateParams::default();
            p.distinguished_name
                .push(DnType::CommonName, format!("{name}-node-{}", i + 1));
            p.subject_alt_names = vec![
                SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()),
                SanType::DnsName("localhost".try_into().map_err(err)?),
            ];
            let cert = p.signed_by(&key, &ca, &ca_key).map_err(err)?;
            Ok(ServerCerts {
                ca: ca.pem(),
                cert: cert.pem(),
                key: key.serialize_pem(),
            })
        })
        .collect()
}

/// The certificates of one sandbox named `name`: a CA of its own (`dbduel-{name}-ca`) and
/// the server's certificate under it.
pub fn for_sandbox(name: &str) -> Result<ServerCerts, String> {
    #[cfg(feature = "servers")]
    return make(&format!("dbduel-{name}"), 1)?
        .pop()
        .ok_or_else(|| format!("no certificate was made for {name}"));
    // Certificates are made with what only the server engines bring.
    #[cfg(not(feature = "servers"))]
    Err(format!(
        "no certificates for {name}: {}",
        crate::engines::WITHOUT_SERVERS
    ))
}

impl ServerCerts {
    /// Write the files, in the directory of what the server only reads: dbduel's, 0600, or
    /// readable by `owner`'s group when given (0640) — the server reads its key and cannot
    /// change it (PostgreSQL takes a key of root's at 0640).
    pub fn write(&self, f: &Files, owner: Option<&ServiceUser>) -> super::Result<()> {
        secret::write_readable_by(&f.ca, &self.ca, owner)?;
        secret::write_readable_by(&f.cert, &self.cert, owner)?;
        secret::write_readable_by(&f.key, &self.key, owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_gets_its_own_key_under_one_ca_made_for_it() {
        let a = make("dbduel-a", 3).expect("made");
        assert_eq!(a.len(), 3);
        assert!(a.iter().all(|n| n.ca == a[0].ca), "one CA a cluster");
        assert_ne!(a[0].key, a[1].key, "a key a node");
        assert!(a[0].cert.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(a[0].key.contains("PRIVATE KEY"));
        let b = make("dbduel-b", 1).expect("made");
        assert_ne!(a[0].ca, b[0].ca, "another cluster, another CA");
        assert_eq!(format!("{:?}", a[0]), "ServerCerts { .. }");
    }
}
