//! Network plumbing shared by the HTTP transport and the OAuth client.

use std::sync::{Arc, OnceLock};

/// The TLS configuration used unless one is given: the Mozilla roots of
/// `webpki-roots` plus the platform's own, TLS 1.2 and 1.3, ring. Built
/// once per process; the error says why TLS cannot be set up.
pub fn default_tls() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            for cert in rustls_native_certs::load_native_certs().certs {
                // A platform certificate rustls cannot parse is skipped, as
                // browsers do; the bundled roots remain.
                let _ = roots.add(cert);
            }
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
            .map_err(|e| format!("cannot set up TLS: {e}"))
        })
        .clone()
}

/// The message of an error and its sources, joined with `: ` (a source
/// whose text the message already holds is left out).
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn joins_sources_once() {
        let e = Layer(
            "connect failed: refused",
            Some(Box::new(Layer(
                "refused",
                Some(Box::new(Layer("os error 111", None))),
            ))),
        );
        assert_eq!(error_chain(&e), "connect failed: refused: os error 111");
    }

    #[test]
    fn tls_is_set_up_once() {
        let a = default_tls().unwrap();
        let b = default_tls().unwrap();
        assert!(Arc::ptr_eq(&a, &b));
    }
}
