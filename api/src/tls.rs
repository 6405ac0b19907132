//! The daemon's TLS identity: an ECDSA P-256 key and a self-signed certificate, made on first
//! start under `XCD_HOME` and reused after, so programs can pin its fingerprint.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// The certificate file under `XCD_HOME`.
pub const CERT_FILE: &str = "cert.pem";
/// The private key file under `XCD_HOME`, readable by its owner only.
pub const KEY_FILE: &str = "key.pem";

/// Why the identity could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file read or written.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// One of the two files is there without the other.
    #[error(
        "{present} exists but {missing} does not: restore it, or remove both to make a new certificate (programs that pinned the old one will then refuse this daemon until their pin is removed)"
    )]
    HalfIdentity {
        /// The file that exists.
        present: PathBuf,
        /// The file that does not.
        missing: PathBuf,
    },
    /// A file is not PEM of the expected kind.
    #[error("{path} is not a PEM {what}: {error}")]
    Pem {
        /// The file read or written.
        path: PathBuf,
        /// Certificate or key.
        what: &'static str,
        /// The parser's complaint.
        error: String,
    },
    /// The private key can be read by others than its owner.
    #[error(
        "{path} can be read by others (mode {mode:o}): whoever read it can pose as this daemon. If that cannot have happened, make it private with `chmod 600 {path}`; if it may have, remove both files under {home} to make a new identity (programs will then say the certificate changed until their pin is removed)"
    )]
    KeyReadable {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// Its folder.
        home: PathBuf,
    },
    /// rcgen could not make a certificate.
    #[error("cannot make a certificate: {0}")]
    Generate(String),
    /// rustls refused the key or certificate.
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(String),
}

/// A certificate and its private key.
#[derive(Debug)]
pub struct Identity {
    /// The certificate, DER.
    pub cert: CertificateDer<'static>,
    /// The private key, DER.
    key: PrivateKeyDer<'static>,
    /// SHA-256 of the certificate's DER.
    pub fingerprint: [u8; 32],
    /// True when this start made the identity.
    pub created: bool,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |error| TlsError::Io { path: path.to_owned(), error }
}

impl Identity {
    /// Reads the identity under `home`, or makes one there if neither file exists.
    pub fn load_or_create(home: &Path) -> Result<Identity, TlsError> {
        let (cert_path, key_path) = (home.join(CERT_FILE), home.join(KEY_FILE));
        match (cert_path.exists(), key_path.exists()) {
            (true, true) => Self::load(&cert_path, &key_path),
            (false, false) => Self::create(home, &cert_path, &key_path),
            (true, false) => Err(TlsError::HalfIdentity { present: cert_path, missing: key_path }),
            (false, true) => Err(TlsError::HalfIdentity { present: key_path, missing: cert_path }),
        }
    }

    fn load(cert_path: &Path, key_path: &Path) -> Result<Identity, TlsError> {
        restrict(key_path)?;
        let cert = CertificateDer::from_pem_file(cert_path).map_err(|e| TlsError::Pem {
            path: cert_path.to_owned(),
            what: "certificate",
            error: e.to_string(),
        })?;
        let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| TlsError::Pem {
            path: key_path.to_owned(),
            what: "private key",
            error: e.to_string(),
        })?;
        Ok(Identity { fingerprint: xcd_wire::content_hash(&cert), cert, key, created: false })
    }

    fn create(home: &Path, cert_path: &Path, key_path: &Path) -> Result<Identity, TlsError> {
        std::fs::create_dir_all(home).map_err(io(home))?;
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .map_err(|e| TlsError::Generate(e.to_string()))?;
        let mut names = vec!["localhost".to_owned()];
        if let Ok(host) = std::fs::read_to_string("/etc/hostname") {
            let host = host.trim();
            if !host.is_empty() && host != "localhost" {
                names.push(host.to_owned());
            }
        }
        let mut params = rcgen::CertificateParams::new(names).map_err(|e| TlsError::Generate(e.to_string()))?;
        params.distinguished_name.push(rcgen::DnType::CommonName, "xcd");
        let cert = params.self_signed(&key).map_err(|e| TlsError::Generate(e.to_string()))?;
        write_private(key_path, key.serialize_pem().as_bytes())?;
        std::fs::write(cert_path, cert.pem()).map_err(io(cert_path))?;
        let der = cert.der().clone();
        let key_der = PrivateKeyDer::try_from(key.serialize_der()).map_err(|e| TlsError::Generate(e.to_string()))?;
        Ok(Identity { fingerprint: xcd_wire::content_hash(&der), cert: der, key: key_der, created: true })
    }

    /// The fingerprint as lowercase hex.
    pub fn fingerprint_hex(&self) -> String {
        hex::encode(self.fingerprint)
    }

    /// A rustls server configuration offering HTTP/2 and HTTP/1.1 (ALPN).
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(vec![self.cert.clone()], self.key.clone_key())
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// Writes a file only its owner can read.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(io(path))?;
    file.write_all(bytes).map_err(io(path))?;
    file.sync_all().map_err(io(path))
}

/// Refuses an existing key that others than its owner may read (or write).
fn restrict(path: &Path) -> Result<(), TlsError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_err(io(path))?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            let home = path.parent().map(Path::to_path_buf).unwrap_or_default();
            return Err(TlsError::KeyReadable { path: path.to_owned(), mode, home });
        }
    }
    // Elsewhere (Windows) the key lives in the user's profile folder, whose access list already
    // keeps other users out; there are no mode bits to check.
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xcd-tls-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn made_once_then_reused_with_a_private_key() {
        let dir = home("reuse");
        let first = Identity::load_or_create(&dir).expect("made");
        assert!(first.created);
        let second = Identity::load_or_create(&dir).expect("read");
        assert!(!second.created);
        assert_eq!(first.fingerprint, second.fingerprint);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(KEY_FILE)).expect("key").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        first.server_config().expect("a TLS configuration");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_key_others_can_read_is_refused_and_left_as_it_is() {
        use std::os::unix::fs::PermissionsExt;
        let dir = home("open");
        Identity::load_or_create(&dir).expect("made");
        let key = dir.join(KEY_FILE);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let e = Identity::load_or_create(&dir).expect_err("refused");
        let text = e.to_string();
        assert!(text.contains("can be read by others (mode 644)") && text.contains("chmod 600"), "{text}");
        let mode = std::fs::metadata(&key).expect("key").permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "the daemon does not decide for the owner");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        Identity::load_or_create(&dir).expect("read once private again");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_lone_file_is_not_replaced() {
        let dir = home("half");
        Identity::load_or_create(&dir).expect("made");
        std::fs::remove_file(dir.join(CERT_FILE)).expect("removed");
        let e = Identity::load_or_create(&dir).expect_err("refused");
        assert!(e.to_string().contains("remove both"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
