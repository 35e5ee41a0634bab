//! A test CA and two certificates it signed for `localhost` and
//! `127.0.0.1` (`server-a`, `server-b`, each with its key), valid until
//! 2126, for the HTTPS tests of the server framework and the gateway; and a
//! client configuration trusting only that CA. Made with:
//!
//! ```text
//! openssl ecparam -name prime256v1 -genkey -noout -out ca.key
//! openssl req -x509 -new -key ca.key -sha256 -days 36500 -subj "/CN=switchboard gateway test CA" \
//!   -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem
//! for n in a b; do
//!   openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out server-$n.key
//!   openssl req -new -key server-$n.key -subj "/CN=localhost $n" -out s.csr
//!   openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 36500 -sha256 \
//!     -extfile <(printf "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n") \
//!     -out server-$n.pem
//! done
//! ```
//! (`ca.key` is not kept.)

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The path of fixture `name` (`ca.pem`, `server-a.pem`, `server-a.key`,
/// `server-b.pem`, `server-b.key`).
#[must_use]
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/tls")
        .join(name)
}

/// The text of fixture `name`.
///
/// # Panics
/// When it cannot be read.
#[must_use]
pub fn pem(name: &str) -> String {
    let path = fixture(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The DER of the (first) certificate in fixture `name`.
///
/// # Panics
/// When it holds none.
#[must_use]
pub fn der(name: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem(name).as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A TLS client configuration (rustls with ring) trusting only the test
/// CA.
///
/// # Panics
/// When rustls refuses the CA (it does not).
#[must_use]
pub fn client_trusting_test_ca() -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(der("ca.pem"))
        .unwrap_or_else(|e| panic!("the test CA: {e}"));
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap_or_else(|e| panic!("TLS versions: {e}"))
    .with_root_certificates(roots)
    .with_no_client_auth();
    Arc::new(config)
}
