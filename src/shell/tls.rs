//! TLS for peer links (rustls, mutual): both ends present a certificate signed by the
//! cluster's CA (`--repl-tls-ca`) and check the other's. The cluster-secret handshake
//! still runs inside, so a stolen certificate alone does not admit a node.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::{TlsAcceptor, TlsConnector};

pub struct PeerTls {
    pub acceptor: TlsAcceptor,
    pub connector: TlsConnector,
}

fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{what} {}: {e}", path.display()))?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut std::io::BufReader::new(file))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{what} {}: not PEM certificates: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{what} {}: no certificate in the file", path.display()));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("--repl-tls-key {}: {e}", path.display()))?;
    rustls_pemfile::private_key(&mut std::io::BufReader::new(file))
        .map_err(|e| format!("--repl-tls-key {}: {e}", path.display()))?
        .ok_or_else(|| format!("--repl-tls-key {}: no private key in the file", path.display()))
}

/// Load the node's certificate and key and the cluster CA; errors name the file.
pub fn load(cert: &Path, key: &Path, ca: &Path) -> Result<PeerTls, String> {
    let certs = read_certs(cert, "--repl-tls-cert")?;
    let key = read_key(key)?;
    let mut roots = rustls::RootCertStore::empty();
    for ca_cert in read_certs(ca, "--repl-tls-ca")? {
        roots.add(ca_cert).map_err(|e| format!("--repl-tls-ca {}: {e}", ca.display()))?;
    }
    let roots = Arc::new(roots);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client_verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
        .build()
        .map_err(|e| format!("--repl-tls-ca {}: {e}", ca.display()))?;
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(certs.clone(), key.clone_key())
        .map_err(|e| format!("--repl-tls-cert/--repl-tls-key: {e}"))?;
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(|e| format!("--repl-tls-cert/--repl-tls-key: {e}"))?;
    Ok(PeerTls { acceptor: TlsAcceptor::from(Arc::new(server)), connector: TlsConnector::from(Arc::new(client)) })
}

/// The name a peer's certificate must carry: the host part of its `host:port`.
pub fn server_name(addr: &str) -> Result<ServerName<'static>, String> {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|e| format!("peer {addr}: {e}"))
}
