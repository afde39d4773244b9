//! TLS for `rootfence serve` (rustls, ring): the certificate chain and private key from PEM
//! files, HTTP/2 and HTTP/1.1 offered by ALPN. Handshakes run per connection, never in the
//! accept loop, and are bounded in time.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why TLS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate file.
    #[error("{0}: no usable PEM certificate ({1}); give the full chain, leaf first")]
    Cert(PathBuf, String),
    /// The key file.
    #[error("{0}: no usable PEM private key ({1}); give the key of the leaf certificate")]
    Key(PathBuf, String),
    /// The pair does not make a configuration.
    #[error("the certificate and key do not go together: {0}")]
    Config(String),
}

/// A TLS acceptor for a certificate chain and its key.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| TlsError::Cert(cert.to_owned(), e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Cert(cert.to_owned(), e.to_string()))?;
    if chain.is_empty() {
        return Err(TlsError::Cert(
            cert.to_owned(),
            "the file holds none".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| TlsError::Key(key.to_owned(), e.to_string()))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
