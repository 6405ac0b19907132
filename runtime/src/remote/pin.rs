//! Certificate pinning: a daemon's certificate is trusted by its SHA-256 fingerprint, kept on
//! first contact, not by a certificate authority (daemons make their own certificates).

use parking_lot::Mutex;
use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

/// Accepts exactly the pinned certificate, or any on first contact, and records what it saw.
#[derive(Debug)]
pub(crate) struct PinVerifier {
    /// The fingerprint kept from the first contact, if any.
    expected: Option<[u8; 32]>,
    /// The fingerprint the daemon presented, for the caller to keep or to name in a refusal.
    pub(crate) seen: Arc<Mutex<Option<[u8; 32]>>>,
    provider: Arc<CryptoProvider>,
}

impl PinVerifier {
    pub(crate) fn new(expected: Option<[u8; 32]>, provider: Arc<CryptoProvider>) -> Self {
        PinVerifier { expected, seen: Arc::default(), provider }
    }
}

/// The fingerprint a daemon presented, once the handshake has seen it.
pub type Seen = Arc<Mutex<Option<[u8; 32]>>>;

/// A TLS client configuration (ring, safe protocol versions, no client certificate) that trusts
/// exactly the certificate pinned as `expected`, or any on first contact, and where the
/// fingerprint it saw is kept.
pub fn client_config(expected: Option<[u8; 32]>) -> Result<(rustls::ClientConfig, Seen), rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(PinVerifier::new(expected, provider.clone()));
    let seen = verifier.seen.clone();
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok((config, seen))
}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let fingerprint = xcd_wire::content_hash(end_entity);
        *self.seen.lock() = Some(fingerprint);
        match self.expected {
            Some(pin) if pin != fingerprint => {
                Err(rustls::Error::General("the certificate differs from its pin".into()))
            }
            _ => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
