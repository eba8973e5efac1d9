//! TLS as redis-server 7.0 configures it (`tls.c`'s `tlsConfigure`), on rustls with the `ring`
//! backend: the certificate chain and key (`tls-cert-file`, `tls-key-file`, with
//! `tls-key-file-pass` for an encrypted PKCS#8 key), the CAs that verify client certificates
//! (`tls-ca-cert-file`, `tls-ca-cert-dir`) as `tls-auth-clients` asks, `tls-protocols`,
//! `tls-ciphers` (TLS 1.2, OpenSSL names) and `tls-ciphersuites` (TLS 1.3), server cipher
//! preference and the session cache.
//!
//! A configuration is built whole or not at all: [`configure`] either replaces the one new
//! connections get ([`acceptor`]) or leaves it and logs why, with Redis's log lines where Redis has
//! them. Connections already open keep the configuration they were accepted with.
//! What rustls lacks (TLS 1.0/1.1, CBC and non-ECDHE cipher suites, finite-field DH, legacy
//! OpenSSL-encrypted PEM keys) is refused with a message that says so (docs/tls.md).

use parking_lot::{Mutex, RwLock};
use rustls::crypto::{CryptoProvider, ring};
use rustls::server::{NoServerSessionStorage, StoresServerSessions, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// The server configurations built by the last successful [`configure`], one per
/// `tls-auth-clients` mode (Redis sets the verify mode per connection at accept, so changing
/// `tls-auth-clients` needs no reload). The client-authenticating ones exist only with a CA.
struct Acceptors {
    no: TlsAcceptor,
    yes: Option<TlsAcceptor>,
    optional: Option<TlsAcceptor>,
    /// The client side (a replica's link to its primary with `tls-replication yes`): present
    /// with a CA to check the primary's certificate.
    connector: Option<TlsConnector>,
}

static CURRENT: RwLock<Option<Arc<Acceptors>>> = RwLock::new(None);

/// The acceptor for a new connection under `auth` (`tls-auth-clients`: `no`, `yes`, `optional`),
/// or None when TLS is not configured (or client authentication is asked for without a CA, which
/// [`configure`] refuses but `CONFIG SET tls-auth-clients` alone can reach: such connections are
/// refused, as OpenSSL fails every verification without trusted certificates).
pub fn acceptor(auth: &str) -> Option<TlsAcceptor> {
    let cur = CURRENT.read().clone()?;
    match auth {
        "no" => Some(cur.no.clone()),
        "optional" => Some(cur.optional.clone().unwrap_or_else(|| cur.no.clone())),
        _ => cur.yes.clone(),
    }
}

/// The connector a replica's link uses with `tls-replication yes`, or None when TLS is not
/// configured with a CA.
pub fn connector() -> Option<TlsConnector> {
    CURRENT.read().clone()?.connector.clone()
}

/// Checks a primary's certificate as Redis's OpenSSL client does: the chain must lead to a
/// configured CA (`SSL_VERIFY_PEER`); the name in it is not compared with the host dialled
/// (Redis sets no host name to verify), so a primary reached by address works with a certificate
/// for its name.
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls_pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForNameContext { .. })) => {
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The `tls-*` parameters [`configure`] reads, by name.
pub type Values<'a> = &'a dyn Fn(&str) -> String;

/// Redis's `tlsConfigure`: builds the configuration from `value` and the files it names and makes
/// it the one new connections get. On failure the reason is logged as Redis logs it and returned.
pub fn configure(value: Values) -> Result<(), String> {
    match build(value) {
        Ok(a) => {
            *CURRENT.write() = Some(Arc::new(a));
            Ok(())
        }
        Err(e) => {
            tracing::warn!("{e}");
            Err(e)
        }
    }
}

fn opt(value: Values, name: &str) -> Option<String> {
    Some(value(name)).filter(|v| !v.is_empty())
}

fn build(value: Values) -> Result<Acceptors, String> {
    let cert_file = opt(value, "tls-cert-file").ok_or("No tls-cert-file configured!")?;
    let key_file = opt(value, "tls-key-file").ok_or("No tls-key-file configured!")?;
    let (ca_file, ca_dir) = (opt(value, "tls-ca-cert-file"), opt(value, "tls-ca-cert-dir"));
    let auth = value("tls-auth-clients");
    if (auth != "no" || value("tls-cluster") == "yes" || value("tls-replication") == "yes")
        && ca_file.is_none()
        && ca_dir.is_none()
    {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let versions = protocols(&value("tls-protocols"))?;
    let mut suites = Vec::new();
    if versions.iter().any(|v| v.version == rustls::ProtocolVersion::TLSv1_3) {
        suites.extend(ciphersuites(&value("tls-ciphersuites"))?);
    }
    if versions.iter().any(|v| v.version == rustls::ProtocolVersion::TLSv1_2) {
        suites.extend(ciphers(&value("tls-ciphers"))?);
    }
    let provider = Arc::new(CryptoProvider { cipher_suites: suites, ..ring::default_provider() });

    let pass = opt(value, "tls-key-file-pass");
    let certs =
        load_certs(Path::new(&cert_file)).map_err(|e| format!("Failed to load certificate: {cert_file}: {e}"))?;
    let key = load_key(Path::new(&key_file), pass.as_deref())
        .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
    let roots = match (&ca_file, &ca_dir) {
        (None, None) => None,
        _ => Some(Arc::new(
            load_roots(ca_file.as_deref(), ca_dir.as_deref())
                .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?,
        )),
    };
    // The client side (a replica's link): `tls-client-cert-file`/`-key-file` when both are set,
    // else the server's own certificate, as Redis's tlsConfigure does.
    let (client_certs, client_key) = match (opt(value, "tls-client-cert-file"), opt(value, "tls-client-key-file")) {
        (Some(c), Some(k)) => (
            load_certs(Path::new(&c)).map_err(|e| format!("Failed to load certificate: {c}: {e}"))?,
            load_key(Path::new(&k), opt(value, "tls-client-key-file-pass").as_deref())
                .map_err(|e| format!("Failed to load private key: {k}: {e}"))?,
        ),
        _ => (certs.clone(), key.clone_key()),
    };
    let connector = match &roots {
        None => None,
        Some(roots) => {
            let chain = rustls::client::WebPkiServerVerifier::builder_with_provider(roots.clone(), provider.clone())
                .build()
                .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?;
            let cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(&versions)
                .map_err(|e| format!("Failed to configure ciphers: {e}"))?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly(chain)))
                .with_client_auth_cert(client_certs, client_key)
                .map_err(|e| format!("Failed to load private key: {e}"))?;
            Some(TlsConnector::from(Arc::new(cfg)))
        }
    };
    if let Some(dh) = opt(value, "tls-dh-params-file") {
        // rustls has no finite-field DHE suites: the file is read, as Redis reads it, and unused.
        std::fs::read(&dh).map_err(|e| format!("Failed to load {dh}: {}", crate::net::strerror(&e)))?;
    }
    let sessions: Arc<dyn StoresServerSessions> = if value("tls-session-caching") == "yes" {
        Arc::new(SessionCache::new(
            value("tls-session-cache-size").parse().unwrap_or(20480),
            Duration::from_secs(value("tls-session-cache-timeout").parse().unwrap_or(300)),
        ))
    } else {
        Arc::new(NoServerSessionStorage {})
    };
    let prefer_server = value("tls-prefer-server-ciphers") == "yes";
    let make = |verifier: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>| -> Result<TlsAcceptor, String> {
        let b = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| format!("Failed to configure ciphers: {e}"))?;
        let b = match verifier {
            Some(v) => b.with_client_cert_verifier(v),
            None => b.with_no_client_auth(),
        };
        let mut cfg = b
            .with_single_cert(certs.clone(), key.clone_key())
            .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
        cfg.ignore_client_order = prefer_server;
        cfg.session_storage = sessions.clone();
        Ok(TlsAcceptor::from(Arc::new(cfg)))
    };
    let verifier = |optional: bool| -> Result<Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>, String> {
        let Some(roots) = &roots else { return Ok(None) };
        let b = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone());
        let b = if optional { b.allow_unauthenticated() } else { b };
        b.build().map(Some).map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))
    };
    let no = make(None)?;
    let (yes, optional) = match &roots {
        Some(_) => (Some(make(verifier(false)?)?), Some(make(verifier(true)?)?)),
        None => (None, None),
    };
    Ok(Acceptors { no, yes, optional, connector })
}

/// `tls-protocols` (Redis's `parseProtocolsConfig`): space-separated, case-insensitive; empty is
/// TLS 1.2 and 1.3. rustls has no TLS 1.0 or 1.1.
fn protocols(v: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    if v.is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut out: Vec<&'static SupportedProtocolVersion> = Vec::new();
    for t in v.split(' ').filter(|t| !t.is_empty()) {
        let p = match t.to_ascii_lowercase().as_str() {
            "tlsv1.2" => &rustls::version::TLS12,
            "tlsv1.3" => &rustls::version::TLS13,
            "tlsv1" | "tlsv1.1" => {
                return Err(format!(
                    "{t} is specified in tls-protocols but not supported (rustls has TLSv1.2 and TLSv1.3 only)."
                ));
            }
            _ => {
                return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into());
            }
        };
        if !out.iter().any(|q| q.version == p.version) {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err("Invalid tls-protocols configuration string".into());
    }
    Ok(out)
}

/// TLS 1.3 suites by their IANA/OpenSSL names (the same for 1.3).
const TLS13: &[(&str, SupportedCipherSuite)] = &[
    ("TLS_AES_256_GCM_SHA384", ring::cipher_suite::TLS13_AES_256_GCM_SHA384),
    ("TLS_AES_128_GCM_SHA256", ring::cipher_suite::TLS13_AES_128_GCM_SHA256),
    ("TLS_CHACHA20_POLY1305_SHA256", ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256),
];

/// TLS 1.2 suites by their OpenSSL names, in ring's default order.
const TLS12: &[(&str, SupportedCipherSuite)] = &[
    ("ECDHE-ECDSA-AES256-GCM-SHA384", ring::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384),
    ("ECDHE-ECDSA-AES128-GCM-SHA256", ring::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
    ("ECDHE-ECDSA-CHACHA20-POLY1305", ring::cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
    ("ECDHE-RSA-AES256-GCM-SHA384", ring::cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
    ("ECDHE-RSA-AES128-GCM-SHA256", ring::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
    ("ECDHE-RSA-CHACHA20-POLY1305", ring::cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256),
];

/// `tls-ciphersuites`: a `:`-separated list of TLS 1.3 suite names; empty is all of them.
fn ciphersuites(v: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    if v.is_empty() {
        return Ok(TLS13.iter().map(|(_, s)| *s).collect());
    }
    let mut out = Vec::new();
    for name in v.split(':').filter(|n| !n.is_empty()) {
        match TLS13.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some((_, s)) if !out.contains(s) => out.push(*s),
            Some(_) => {}
            None => {
                return Err(format!(
                    "Failed to configure ciphersuites: {v}: {name} is not a TLS 1.3 suite rustls has (it has {})",
                    TLS13.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    if out.is_empty() {
        return Err(format!("Failed to configure ciphersuites: {v}"));
    }
    Ok(out)
}

/// `tls-ciphers`: an OpenSSL cipher list for TLS 1.2 (`:`, `,` or space separated) over the suites
/// rustls has. `DEFAULT`, `ALL`, `HIGH` and `ECDHE` stand for all of them; `-NAME` and `!NAME`
/// remove a suite (a name rustls lacks is already absent); `+NAME` moves one to the end. A plain
/// name rustls lacks is an error. Empty is all of them.
fn ciphers(v: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    let all = || TLS12.iter().map(|(_, s)| *s).collect::<Vec<_>>();
    if v.is_empty() {
        return Ok(all());
    }
    let find = |name: &str| TLS12.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, s)| *s);
    let is_group = |name: &str| {
        ["DEFAULT", "ALL", "HIGH", "ECDHE", "EECDH", "AESGCM"].iter().any(|g| g.eq_ignore_ascii_case(name))
    };
    let mut out: Vec<SupportedCipherSuite> = Vec::new();
    for item in v.split([':', ',', ' ']).filter(|n| !n.is_empty()) {
        let (op, name) = match item.as_bytes()[0] {
            b'-' | b'!' => ('-', &item[1..]),
            b'+' => ('+', &item[1..]),
            _ => (' ', item),
        };
        let group = is_group(name);
        match op {
            '-' if group => out.clear(),
            '-' => {
                if let Some(s) = find(name) {
                    out.retain(|x| *x != s);
                }
            }
            '+' => {
                if let Some(s) = find(name)
                    && let Some(i) = out.iter().position(|x| *x == s)
                {
                    let s = out.remove(i);
                    out.push(s);
                }
            }
            _ if group => out.extend(all().into_iter().filter(|s| !out.contains(s)).collect::<Vec<_>>()),
            _ => match find(name) {
                Some(s) if !out.contains(&s) => out.push(s),
                Some(_) => {}
                None => {
                    return Err(format!(
                        "Failed to configure ciphers: {v}: {name} is not a TLS 1.2 cipher rustls has (it has {})",
                        TLS12.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                    ));
                }
            },
        }
    }
    if out.is_empty() {
        return Err(format!("Failed to configure ciphers: {v}"));
    }
    Ok(out)
}

/// A PEM file's certificates, in order (the chain: leaf first).
fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| crate::net::strerror(&e))?;
    let certs = CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>().map_err(|e| format!("{e:?}"))?;
    if certs.is_empty() {
        return Err("no certificate in the file".into());
    }
    Ok(certs)
}

/// A PEM private key: PKCS#8, PKCS#1 (RSA) or SEC1 (EC); an encrypted PKCS#8 key
/// (`BEGIN ENCRYPTED PRIVATE KEY`, what OpenSSL 3 writes) is decrypted with `pass`.
fn load_key(path: &Path, pass: Option<&str>) -> Result<PrivateKeyDer<'static>, String> {
    let pem = std::fs::read(path).map_err(|e| crate::net::strerror(&e))?;
    let text = String::from_utf8_lossy(&pem);
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        let Some(pass) = pass else { return Err("the key is encrypted and no tls-key-file-pass is set".into()) };
        let (_, doc) = pkcs8::der::Document::from_pem(&text).map_err(|e| format!("bad PEM: {e}"))?;
        let enc =
            pkcs8::EncryptedPrivateKeyInfo::try_from(doc.as_bytes()).map_err(|e| format!("bad encrypted key: {e}"))?;
        let plain = enc.decrypt(pass).map_err(|e| format!("cannot decrypt the key (bad password?): {e}"))?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(plain.as_bytes().to_vec())));
    }
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err("legacy OpenSSL-encrypted PEM keys (Proc-Type: 4,ENCRYPTED) are not supported; convert the key to encrypted PKCS#8 (openssl pkcs8 -topk8 -v2 aes-256-cbc)".into());
    }
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| format!("no usable private key in the file ({e:?})"))
}

/// The trusted CAs: every certificate of `file`, and of every regular file of `dir` (OpenSSL
/// looks certificates up in a directory by subject hash; reading them all trusts the same set).
fn load_roots(file: Option<&str>, dir: Option<&str>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let mut add = |path: &Path| -> Result<(), String> {
        for c in load_certs(path).map_err(|e| format!("{}: {e}", path.display()))? {
            roots.add(c).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(())
    };
    if let Some(f) = file {
        add(Path::new(f))?;
    }
    if let Some(d) = dir {
        let entries = std::fs::read_dir(d).map_err(|e| format!("{d}: {}", crate::net::strerror(&e)))?;
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()) {
                // Files without certificates (keys, CRLs) are skipped, as OpenSSL's lookup never reads them.
                let _ = add(&e.path());
            }
        }
    }
    if roots.is_empty() {
        return Err("no CA certificate found".into());
    }
    Ok(roots)
}

/// The server's session cache (`tls-session-caching`): at most `size` sessions (0: no limit, as
/// OpenSSL's `SSL_CTX_sess_set_cache_size`), each kept `timeout` (`tls-session-cache-timeout`).
#[derive(Debug)]
struct SessionCache {
    size: usize,
    timeout: Duration,
    /// Sessions by id, and the ids in insertion order (the oldest goes first when full).
    inner: Mutex<(Sessions, VecDeque<Vec<u8>>)>,
}

/// Session id -> (encoded session, when it was stored).
type Sessions = HashMap<Vec<u8>, (Vec<u8>, Instant)>;

impl SessionCache {
    fn new(size: usize, timeout: Duration) -> SessionCache {
        SessionCache { size, timeout, inner: Mutex::default() }
    }
}

impl StoresServerSessions for SessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let mut g = self.inner.lock();
        let (map, order) = &mut *g;
        let now = Instant::now();
        while let Some(k) = order.front() {
            let stale = map.get(k).is_none_or(|(_, at)| now.duration_since(*at) > self.timeout);
            if !stale && (self.size == 0 || map.len() < self.size) {
                break;
            }
            let k = order.pop_front().unwrap_or_default();
            map.remove(&k);
        }
        if map.insert(key.clone(), (value, now)).is_none() {
            order.push_back(key);
        }
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let g = self.inner.lock();
        g.0.get(key).filter(|(_, at)| at.elapsed() <= self.timeout).map(|(v, _)| v.clone())
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut g = self.inner.lock();
        g.0.remove(key).filter(|(_, at)| at.elapsed() <= self.timeout).map(|(v, _)| v)
    }

    fn can_cache(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_as_redis_parses_them() {
        assert_eq!(protocols("").unwrap().len(), 2);
        assert_eq!(protocols("TLSv1.2").unwrap()[0].version, rustls::ProtocolVersion::TLSv1_2);
        assert_eq!(protocols("tlsv1.3 TLSv1.2").unwrap().len(), 2);
        assert!(protocols("TLSv1.1").unwrap_err().contains("not supported"));
        assert!(protocols("TLSv1 TLSv1.2").is_err());
        assert_eq!(
            protocols("SSLv3").unwrap_err(),
            "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'."
        );
    }

    #[test]
    fn cipher_lists_map_openssl_names() {
        assert_eq!(ciphers("").unwrap().len(), TLS12.len());
        assert_eq!(ciphers("DEFAULT:-AES128-SHA256").unwrap().len(), TLS12.len());
        let one = ciphers("ECDHE-RSA-AES128-GCM-SHA256").unwrap();
        assert_eq!(one, vec![ring::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]);
        let without = ciphers("HIGH:!ECDHE-RSA-AES128-GCM-SHA256").unwrap();
        assert_eq!(without.len(), TLS12.len() - 1);
        assert!(ciphers("AES128-SHA256").unwrap_err().contains("not a TLS 1.2 cipher rustls has"));
        assert!(ciphers("-ALL").is_err());
        assert_eq!(ciphersuites("TLS_AES_128_GCM_SHA256").unwrap().len(), 1);
        assert!(ciphersuites("TLS_AES_128_CCM_SHA256").is_err());
    }

    #[test]
    fn session_cache_bounds_size_and_age() {
        let c = SessionCache::new(2, Duration::from_secs(300));
        for k in [1u8, 2, 3] {
            c.put(vec![k], vec![k]);
        }
        assert_eq!(c.get(&[1]), None);
        assert_eq!(c.get(&[3]), Some(vec![3]));
        let c = SessionCache::new(0, Duration::ZERO);
        c.put(vec![1], vec![1]);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(c.get(&[1]), None);
    }
}
