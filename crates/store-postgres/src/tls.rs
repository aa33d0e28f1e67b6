//! TLS for connections: rustls with the webpki roots, never OpenSSL.

use std::sync::Arc;

use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::PgError;

/// The connector every connection uses. Whether TLS is used at all is the
/// URL's `sslmode` (`disable`, `prefer` by default, `require`); a unix
/// socket never uses it. The crypto provider is named here (ring), so the
/// process-wide default does not matter.
pub(crate) fn connector() -> Result<MakeRustlsConnect, PgError> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| PgError::Runtime {
        reason: format!("cannot set up TLS: {e}"),
    })?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}
