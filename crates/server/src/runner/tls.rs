//! TLS for the HTTP runner (rustls with ring): a certificate chain and its
//! key, read from PEM, and replaceable while serving, so a renewed
//! certificate is used from the next connection on without a restart
//! (connections already open keep theirs).

use std::path::Path;
use std::sync::{Arc, RwLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use switchboard_wire::shared::{read_lock, write_lock};
use tokio_rustls::TlsAcceptor;

/// A server's certificate and key, as the HTTP runner serves them
/// ([`crate::http::HttpOptions::tls`]). Clones share the pair: a
/// replacement through one is seen by all.
#[derive(Clone)]
pub struct ServerTls {
    acceptor: Arc<RwLock<TlsAcceptor>>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerTls(..)")
    }
}

/// Why a certificate and key cannot be served.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TlsError(String);

impl ServerTls {
    /// The certificate chain `chain` (PEM, the server's certificate first)
    /// and its private key `key` (PEM: PKCS#8, PKCS#1 or SEC1).
    ///
    /// # Errors
    /// [`TlsError`] when either does not parse, the chain is empty, or the
    /// key is not the certificate's.
    pub fn from_pem(chain: &[u8], key: &[u8]) -> Result<ServerTls, TlsError> {
        Ok(ServerTls {
            acceptor: Arc::new(RwLock::new(acceptor(
                chain,
                key,
                "the certificate",
                "the key",
            )?)),
        })
    }

    /// [`ServerTls::from_pem`] of the files `chain` and `key`.
    ///
    /// # Errors
    /// [`TlsError`] naming the file that cannot be read or used.
    pub fn from_pem_files(chain: &Path, key: &Path) -> Result<ServerTls, TlsError> {
        Ok(ServerTls {
            acceptor: Arc::new(RwLock::new(acceptor_of_files(chain, key)?)),
        })
    }

    /// Serves the certificate and key of the files `chain` and `key` from
    /// the next connection on; on an error the pair in use stays.
    ///
    /// # Errors
    /// As [`ServerTls::from_pem_files`].
    pub fn replace_from_pem_files(&self, chain: &Path, key: &Path) -> Result<(), TlsError> {
        let next = acceptor_of_files(chain, key)?;
        *write_lock(&self.acceptor) = next;
        Ok(())
    }

    /// The acceptor for a new connection.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        read_lock(&self.acceptor).clone()
    }
}

fn acceptor_of_files(chain: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| TlsError(format!("cannot read {}: {e}", path.display())))
    };
    acceptor(
        &read(chain)?,
        &read(key)?,
        &chain.display().to_string(),
        &key.display().to_string(),
    )
}

fn acceptor(
    chain: &[u8],
    key: &[u8],
    chain_name: &str,
    key_name: &str,
) -> Result<TlsAcceptor, TlsError> {
    let certs = CertificateDer::pem_slice_iter(chain)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError(format!("{chain_name} is not a PEM certificate chain: {e}")))?;
    if certs.is_empty() {
        return Err(TlsError(format!("{chain_name} holds no certificate")));
    }
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|e| TlsError(format!("{key_name} is not a PEM private key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError(format!("cannot set up TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            TlsError(format!(
                "{chain_name} and {key_name} cannot be served together: {e}"
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
