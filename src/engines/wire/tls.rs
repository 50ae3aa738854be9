//! TLS on the client paths: the rustls configuration a target's TLS settings ask for (libpq's
//! `sslmode`, the mysql client's `ssl-mode`), the stream the lean clients read and write
//! whether encrypted or not, and what a session negotiated, for the manifest.
//!
//! The verification levels are libpq's and the mysql client's: `require` encrypts and checks
//! nothing about the certificate (the handshake's signatures still are checked, so the
//! channel is the one the certificate's key made); `verify-ca` checks the chain to the given
//! CA but not the name; `verify-full` checks both. Crypto is rustls's (with ring), never ours.

use crate::engine::EngineError;
use crate::engine::target::{RootCert, TlsMode, TlsSettings};
use crate::engines::wire::tcp::DontWait;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientConnection, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme, StreamOwned};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

/// The largest certificate or key file read: a chain of a few certificates is a few KiB.
const PEM_FILE_LIMIT: u64 = 1024 * 1024;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A failure to set TLS up or to negotiate it: kind `tls`, which a contender reports as a
/// missing prerequisite (exit 3), in the library's words.
pub fn tls_error(family: &str, m: impl std::fmt::Display) -> EngineError {
    EngineError::new("tls", format!("{family}: TLS: {m}"))
}

/// The client configuration `s` asks for; `None` when it asks for no TLS at all.
pub fn client_config(s: &TlsSettings) -> Result<Option<Arc<ClientConfig>>, String> {
    if !s.mode.tries_tls() {
        return Ok(None);
    }
    let provider = provider();
    let chain = match s.mode {
        TlsMode::VerifyCa | TlsMode::VerifyFull => {
            let roots = Arc::new(roots(s.ca.as_ref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| e.to_string())?;
            Some(webpki)
        }
        _ => None,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match chain {
        Some(full) if s.mode == TlsMode::VerifyFull => full,
        chain => Arc::new(Partial {
            chain,
            provider: provider.clone(),
        }),
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match (&s.cert, &s.key) {
        (Some(cert), Some(key)) => {
            let chain = certificates(cert)?;
            let key = private_key(key)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("the client certificate and key: {e}"))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err("give both a client certificate and its key, or neither".into()),
    };
    Ok(Some(Arc::new(config)))
}

fn roots(ca: Option<&RootCert>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match ca {
        Some(RootCert::System) => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(RootCert::File(path)) => {
            let (added, _) = store.add_parsable_certificates(certificates(path)?);
            if added == 0 {
                return Err(format!("{} holds no usable CA certificate", path.display()));
            }
        }
        None => return Err("verification needs the CA that signed the server's certificate: give sslrootcert=FILE (ssl-ca=FILE for MySQL), or sslrootcert=system for the well-known public CAs".into()),
    }
    Ok(store)
}

/// Every certificate in a PEM file.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read_pem(path, false)?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{} holds no PEM certificate", path.display()));
    }
    Ok(certs)
}

/// The private key in a PEM file, which must be the user's own and unreadable to others
/// (libpq's rule for `sslkey`).
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let pem = read_pem(path, true)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| format!("{}: {e}", path.display()))
}

/// A PEM file's bytes: a regular file (no FIFO may block the read), at most
/// [`PEM_FILE_LIMIT`]; when `private`, one of the user's own that no one else can read.
fn read_pem(path: &Path, private: bool) -> Result<Vec<u8>, String> {
    let f = crate::engine::target::open_regular(path, private)?;
    let mut bytes = Vec::new();
    f.take(PEM_FILE_LIMIT)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(bytes)
}

/// The verifier of `require` (no `chain`: the certificate is not checked) and of `verify-ca`
/// (the chain must lead to the CA; the name is not checked). Either way the handshake's
/// signatures are checked, so the session is with the holder of the certificate's key.
#[derive(Debug)]
struct Partial {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Partial {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        // webpki checks the chain before the name: a name error means the chain held.
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The `tls` setting results carry: what a session negotiated and what the target asked,
/// `TLSv1_3 TLS13_AES_256_GCM_SHA384 (verify-full)` or `off (prefer)`.
pub fn setting(asked: &TlsSettings, negotiated: &str) -> String {
    format!("{negotiated} ({})", asked.mode.name())
}

/// A lean client's connection: plain TCP, or TLS over it.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Stream {
    /// The TCP socket underneath (for timeouts, addresses and readiness).
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &t.sock,
        }
    }

    /// Encrypt a plain stream under `config`, checking the server's certificate for `host`:
    /// the handshake runs to its end here, and fails in the library's words. `unread` is
    /// what the caller has received and not consumed: it must be nothing, or a server (or
    /// someone in the middle) could slip plaintext in as if it had come under TLS.
    pub fn start_tls(
        &mut self,
        config: Arc<ClientConfig>,
        host: &str,
        family: &str,
        unread: usize,
    ) -> Result<(), EngineError> {
        if unread != 0 {
            return Err(tls_error(
                family,
                "the server sent more than it should before TLS began (possible injection): not connecting",
            ));
        }
        let Stream::Plain(sock) = self else {
            return Ok(());
        };
        // The socket moves into the TLS stream; a duplicate of its descriptor holds the
        // place meanwhile (dropped, it closes only itself).
        let placeholder = Stream::Plain(
            sock.try_clone()
                .map_err(|e| crate::engines::wire::tcp::io_error(family, e))?,
        );
        let Stream::Plain(mut sock) = std::mem::replace(self, placeholder) else {
            return Ok(());
        };
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| tls_error(family, format!("{host:?} is not a host name: {e}")))?;
        let mut conn =
            ClientConnection::new(config, name).map_err(|e| tls_error(family, e.to_string()))?;
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).map_err(|e| {
                if e.kind() != ErrorKind::InvalidData {
                    return crate::engines::wire::tcp::io_error(family, e);
                }
                let text = e.to_string();
                // The server's TLS library and rustls share nothing to speak.
                let hint = if text.contains("HandshakeFailure") || text.contains("incompatible") {
                    " (the server offers nothing rustls speaks: TLS 1.2 or 1.3 with ECDHE key exchange and AES-GCM or ChaCha20; an old server's TLS library, such as the one MySQL 5.6-8.0.15 bundles, may not)"
                } else {
                    ""
                };
                tls_error(family, format!("{text}{hint}"))
            })?;
        }
        *self = Stream::Tls(Box::new(StreamOwned::new(conn, sock)));
        Ok(())
    }

    /// What the connection negotiated: `TLSv1_3 TLS13_AES_256_GCM_SHA384`, or `off`.
    pub fn describe(&self) -> String {
        match self {
            Stream::Plain(_) => "off".into(),
            Stream::Tls(t) => {
                let version = t
                    .conn
                    .protocol_version()
                    .map_or("?".into(), |v| format!("{v:?}"));
                let suite = t
                    .conn
                    .negotiated_cipher_suite()
                    .map_or("?".into(), |s| format!("{:?}", s.suite()));
                format!("{version} {suite}")
            }
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// Read what has arrived without waiting: `WouldBlock` when nothing has, on a socket that
    /// stays blocking for everything else. Under TLS, records are decrypted until plaintext
    /// comes out or the socket is empty, so no answer waits inside rustls unseen.
    pub fn read_now(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => DontWait(s).read(buf),
            Stream::Tls(t) => loop {
                match t.conn.reader().read(buf) {
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    done => return done,
                }
                if t.conn.read_tls(&mut DontWait(&t.sock))? == 0 {
                    return Ok(0);
                }
                t.conn
                    .process_new_packets()
                    .map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))?;
                while t.conn.wants_write() {
                    t.conn.write_tls(&mut t.sock)?;
                }
            },
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.write_all(buf),
            // One record for the whole command where it fits, then sent at once.
            Stream::Tls(t) => {
                let mut rest = buf;
                while !rest.is_empty() {
                    let n = t.conn.writer().write(rest)?;
                    rest = &rest[n..];
                    if n == 0 && !t.conn.wants_write() {
                        return Err(ErrorKind::WriteZero.into());
                    }
                    while t.conn.wants_write() {
                        t.conn.write_tls(&mut t.sock)?;
                    }
                }
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(t) => t.flush(),
        }
    }
}

/// A reader over [`Stream::read_now`], for [`RecvBuf::fill_available`].
///
/// [`RecvBuf::fill_available`]: crate::engines::wire::recv_buf::RecvBuf::fill_available
pub struct Now<'a>(pub &'a mut Stream);

impl Read for Now<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read_now(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::target::{RootCert, TlsMode, TlsSettings};

    /// A CA named `ca_name` and a server certificate it signs for `name` only, as PEM:
    /// (ca, cert, key).
    fn signed_for(ca_name: &str, name: &str) -> (String, String, String) {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::default();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, ca_name);
        let ca = ca.self_signed(&ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        (ca.pem(), cert.pem(), key.serialize_pem())
    }

    /// A loopback TLS server (rustls's own) with `cert` that echoes one line: its port.
    fn echo_server(cert: &str, key: &str) -> u16 {
        let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .unwrap(),
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for sock in listener.incoming().flatten() {
                let conn = rustls::ServerConnection::new(config.clone()).unwrap();
                let mut s = StreamOwned::new(conn, sock);
                let mut b = [0u8; 5];
                if s.read_exact(&mut b).is_ok() {
                    let _ = s.write_all(&b);
                }
            }
        });
        port
    }

    fn connect(port: u16, s: &TlsSettings) -> Result<Stream, EngineError> {
        let sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
        sock.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let config = client_config(s).map_err(|m| tls_error("test", m))?.unwrap();
        let mut stream = Stream::Plain(sock);
        stream.start_tls(config, "127.0.0.1", "test", 0)?;
        Ok(stream)
    }

    #[test]
    fn each_level_checks_what_libpq_checks() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, cert, key) = signed_for("ours", "db.example");
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, &ca).unwrap();
        let (stranger, ..) = signed_for("stranger", "db.example");
        let stranger_file = dir.path().join("stranger.pem");
        std::fs::write(&stranger_file, &stranger).unwrap();
        let port = echo_server(&cert, &key);
        let level = |mode, ca: Option<&Path>| TlsSettings {
            mode,
            ca: ca.map(|p| RootCert::File(p.to_path_buf())),
            ..Default::default()
        };

        // The right CA, a name the certificate does not hold (it is for db.example).
        let e = connect(port, &level(TlsMode::VerifyFull, Some(&ca_file)))
            .err()
            .expect("the name is checked");
        assert_eq!(e.kind, "tls");
        assert!(
            e.message.contains("not valid for name \"127.0.0.1\""),
            "{}",
            e.message
        );
        let mut s = connect(port, &level(TlsMode::VerifyCa, Some(&ca_file))).expect("chain only");
        assert!(s.describe().starts_with("TLSv1_3 "), "{}", s.describe());
        s.write_all(b"hello").unwrap();
        let mut b = [0u8; 5];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"hello");
        // Another CA: refused at verify-ca too; require checks no certificate.
        let e = connect(port, &level(TlsMode::VerifyCa, Some(&stranger_file)))
            .err()
            .expect("the chain is checked");
        assert!(e.message.contains("UnknownIssuer"), "{}", e.message);
        connect(port, &level(TlsMode::Require, None)).expect("require checks no certificate");
    }

    #[test]
    fn files_are_checked_before_any_connection() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let (_, cert_pem, key_pem) = signed_for("ca", "x");
        let cert = dir.path().join("cert.pem");
        std::fs::write(&cert, cert_pem).unwrap();
        let key = dir.path().join("key.pem");
        std::fs::write(&key, key_pem).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let with = |s: TlsSettings| client_config(&s).expect_err("refused");
        let e = with(TlsSettings {
            mode: TlsMode::VerifyFull,
            ca: Some(RootCert::File(empty.clone())),
            ..Default::default()
        });
        assert!(e.contains("no PEM certificate"), "{e}");
        // A key others can read is not used (libpq's rule for sslkey).
        let e = with(TlsSettings {
            mode: TlsMode::Require,
            cert: Some(cert),
            key: Some(key),
            ..Default::default()
        });
        assert!(e.contains("chmod 600"), "{e}");
        assert!(
            client_config(&TlsSettings::default()).unwrap().is_none(),
            "disable asks for no TLS"
        );
    }
}
