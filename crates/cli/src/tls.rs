//! TLS for latch-cli, as redis-cli's `--tls` options set it up (`cliSecureConnection`): the
//! server verified against `--cacert`/`--cacertdir` (the system's roots without either) unless
//! `--insecure`, the name sent and checked is `--sni` or the host, `--cert`/`--key` a client
//! certificate. rustls on the ring backend.

use crate::opts::TlsInfo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// The client side of a TLS connection to `host` (or `--sni`), ready for a handshake; the error
/// is what redis-cli prints after "Could not negotiate a TLS connection: ".
pub fn client(host: &str, t: &TlsInfo) -> Result<ClientConnection, String> {
    let provider = Arc::new(ring::default_provider());
    let b = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let b = if t.insecure {
        b.dangerous().with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
    } else {
        let roots = Arc::new(roots(t)?);
        let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| e.to_string())?;
        b.dangerous().with_custom_certificate_verifier(Arc::new(ChainOnly(inner)))
    };
    let cfg = match (&t.cert, &t.key) {
        (Some(cert), Some(key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|_| "Invalid client certificate".to_string())?;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|_| "Invalid private key".to_string())?;
            b.with_client_auth_cert(certs, key).map_err(|e| e.to_string())?
        }
        (None, None) => b.with_no_client_auth(),
        _ => return Err("Invalid client certificate".into()),
    };
    let name = t.sni.as_deref().unwrap_or(host);
    let name = ServerName::try_from(name.to_string()).map_err(|e| e.to_string())?;
    ClientConnection::new(Arc::new(cfg), name).map_err(|e| e.to_string())
}

/// The trusted CAs: `--cacert` and the files of `--cacertdir`, or the system's.
fn roots(t: &TlsInfo) -> Result<RootCertStore, String> {
    const INVALID: &str = "Invalid CA Certificate File/Directory";
    let mut roots = RootCertStore::empty();
    if t.cacert.is_none() && t.cacertdir.is_none() {
        for c in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(c);
        }
        return Ok(roots);
    }
    if let Some(f) = &t.cacert {
        for c in CertificateDer::pem_file_iter(f).map_err(|_| INVALID.to_string())? {
            roots.add(c.map_err(|_| INVALID.to_string())?).map_err(|_| INVALID.to_string())?;
        }
    }
    if let Some(d) = &t.cacertdir {
        for e in std::fs::read_dir(d).map_err(|_| INVALID.to_string())?.flatten() {
            if let Ok(certs) = CertificateDer::pem_file_iter(e.path()) {
                for c in certs.flatten() {
                    let _ = roots.add(c);
                }
            }
        }
    }
    if roots.is_empty() {
        return Err(INVALID.into());
    }
    Ok(roots)
}

/// The default verification, as redis-cli's (hiredis sets `SSL_VERIFY_PEER` and no host name):
/// the chain must lead to a trusted CA, the names in the certificate are not compared with the
/// host (`--sni` only chooses the name sent).
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(Error::InvalidCertificate(CertificateError::NotValidForName))
            | Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })) => {
                Ok(ServerCertVerified::assertion())
            }
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `--insecure`: any certificate is accepted (its signatures on the handshake are still checked,
/// so the connection is encrypted to whoever holds its key).
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
