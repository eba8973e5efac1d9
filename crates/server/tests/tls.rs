//! TLS through the real binary: a plaintext and a TLS port at once, `tls-auth-clients`
//! yes/no/optional with and without client certificates, untrusted CAs on either side, CONFIG SET
//! reloading the certificate, `tls-protocols`, encrypted keys. Certificates are made at test time
//! with rcgen (nothing secret is committed); clients are rustls on the ring backend.

mod common;

use common::{Latch, free_port};
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, SanType};
use rustls::crypto::ring;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned, SupportedProtocolVersion};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// A CA and the files of what it signed, in a directory of the test's own.
struct Pki {
    dir: PathBuf,
    ca: rcgen::Certificate,
    ca_key: KeyPair,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("latch-tls-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, format!("Latch test CA {name}"));
        let ca = p.self_signed(&ca_key).unwrap();
        std::fs::write(dir.join("ca.crt"), ca.pem()).unwrap();
        Pki { dir, ca, ca_key }
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).to_str().unwrap().to_string()
    }

    /// Signs a certificate for `usage` (server: localhost and 127.0.0.1) and writes `<name>.crt`,
    /// `<name>.key`; returns the certificate's DER.
    fn issue(&self, name: &str, usage: ExtendedKeyUsagePurpose) -> Vec<u8> {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        p.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
        p.distinguished_name.push(DnType::CommonName, name);
        p.extended_key_usages = vec![usage];
        let cert = p.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        std::fs::write(self.dir.join(format!("{name}.crt")), cert.pem()).unwrap();
        std::fs::write(self.dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
        cert.der().to_vec()
    }

    fn server(&self, name: &str) -> Vec<u8> {
        self.issue(name, ExtendedKeyUsagePurpose::ServerAuth)
    }

    fn client(&self, name: &str) -> Vec<u8> {
        self.issue(name, ExtendedKeyUsagePurpose::ClientAuth)
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How a test client connects: the CA it trusts, its certificate (a `<name>` in a Pki), the
/// protocol versions it offers.
struct Client<'a> {
    trust: &'a Pki,
    cert: Option<(&'a Pki, &'a str)>,
    versions: &'a [&'static SupportedProtocolVersion],
}

const BOTH: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13, &rustls::version::TLS12];
const ONLY12: &[&SupportedProtocolVersion] = &[&rustls::version::TLS12];
const ONLY13: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13];

impl<'a> Client<'a> {
    fn new(trust: &'a Pki) -> Client<'a> {
        Client { trust, cert: None, versions: BOTH }
    }

    fn cert(mut self, pki: &'a Pki, name: &'a str) -> Client<'a> {
        self.cert = Some((pki, name));
        self
    }

    fn versions(mut self, v: &'a [&'static SupportedProtocolVersion]) -> Client<'a> {
        self.versions = v;
        self
    }

    /// A TLS connection to `port` with its handshake done, or why it failed.
    fn connect(&self, port: u16) -> Result<StreamOwned<ClientConnection, TcpStream>, String> {
        let mut roots = RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(self.trust.path("ca.crt")).unwrap() {
            roots.add(c.unwrap()).unwrap();
        }
        let b = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_protocol_versions(self.versions)
            .unwrap()
            .with_root_certificates(roots);
        let cfg = match self.cert {
            Some((pki, name)) => {
                let certs = CertificateDer::pem_file_iter(pki.path(&format!("{name}.crt")))
                    .unwrap()
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap();
                let key = PrivateKeyDer::from_pem_file(pki.path(&format!("{name}.key"))).unwrap();
                b.with_client_auth_cert(certs, key).unwrap()
            }
            None => b.with_no_client_auth(),
        };
        let conn = ClientConnection::new(Arc::new(cfg), ServerName::try_from("localhost").unwrap()).unwrap();
        let sock = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        sock.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut s = StreamOwned::new(conn, sock);
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).map_err(|e| e.to_string())?;
        }
        Ok(s)
    }

    /// Connects and sends PING: the reply line, or why there is none.
    fn ping(&self, port: u16) -> Result<String, String> {
        let mut s = self.connect(port)?;
        call(&mut s, "PING")
    }
}

/// Sends an inline command and reads one reply (a simple line, or a bulk string's line and body).
fn call(s: &mut impl ReadWrite, cmd: &str) -> Result<String, String> {
    s.write_all(format!("{cmd}\r\n").as_bytes()).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    loop {
        let n = s.read(&mut b).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(format!("closed after {:?}", String::from_utf8_lossy(&buf)));
        }
        buf.extend_from_slice(&b[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some(line) = text.strip_suffix("\r\n") {
            match line.strip_prefix('$').and_then(|l| l.split("\r\n").next()).and_then(|n| n.parse::<usize>().ok()) {
                Some(len) if text.len() < len + 5 + len.to_string().len() => continue,
                Some(_) => return Ok(text.split_once("\r\n").map(|x| x.1).unwrap_or_default().trim_end().to_string()),
                None => return Ok(line.strip_prefix('+').unwrap_or(line).to_string()),
            }
        }
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A server with TLS on a second free port (the plain one is `port`), configured from `pki`'s
/// `server.crt`/`.key` and CA, plus `args`. Returns the server and its TLS port.
fn start(pki: &Pki, args: &[&str]) -> (Latch, u16) {
    let tls_port = free_port();
    let port = tls_port.to_string();
    let (crt, key, ca) = (pki.path("server.crt"), pki.path("server.key"), pki.path("ca.crt"));
    let mut all = vec!["--tls-port", &port, "--tls-cert-file", &crt, "--tls-key-file", &key, "--tls-ca-cert-file", &ca];
    all.extend(args);
    (Latch::start(&all), tls_port)
}

/// Runs the binary with `args` and expects it to refuse to start: its exit status and output.
fn refuses_to_start(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_latch-server"))
        .args(["--bind", "127.0.0.1", "--port", "0", "--save", ""])
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "started with {args:?}");
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn plaintext_and_tls_ports_at_once() {
    let pki = Pki::new("both");
    pki.server("server");
    let (srv, tls_port) = start(&pki, &["--tls-auth-clients", "no"]);
    assert_eq!(srv.raw().call(b"PING\r\n"), "+PONG\r\n");
    let mut s = Client::new(&pki).connect(tls_port).unwrap();
    assert_eq!(call(&mut s, "PING").unwrap(), "PONG");
    assert_eq!(call(&mut s, "SET k v").unwrap(), "OK");
    // The same data on both ports.
    assert_eq!(srv.raw().call(b"GET k\r\n"), "$1\r\nv\r\n");
    // INFO's tcp_port is the plain port while there is one.
    assert!(call(&mut s, "INFO server").unwrap().contains(&format!("tcp_port:{}", srv.port)));
    assert!(call(&mut s, "CONFIG GET tls-port").unwrap().ends_with(&format!("\r\n{tls_port}")));
    // Plain text on the TLS port gets no reply; a TLS client on the plain port no handshake.
    let mut plain = TcpStream::connect(("127.0.0.1", tls_port)).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    plain.write_all(b"PING\r\n").unwrap();
    let mut b = [0u8; 64];
    // Closed without a reply (Redis's OpenSSL sends no alert to a plain-text client either).
    match plain.read(&mut b) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("plain text on the TLS port: {other:?} {:?}", &b[..8]),
    }
    assert!(Client::new(&pki).ping(srv.port).is_err());
    // CONFIG SET tls-port moves the TLS listener.
    let moved = free_port();
    assert_eq!(call(&mut s, &format!("CONFIG SET tls-port {moved}")).unwrap(), "OK");
    assert_eq!(Client::new(&pki).ping(moved).unwrap(), "PONG");
    assert!(Client::new(&pki).ping(tls_port).is_err());
}

#[test]
fn tls_auth_clients_yes_no_optional() {
    let pki = Pki::new("auth");
    pki.server("server");
    pki.client("client");
    let other = Pki::new("auth-other");
    other.client("stranger");
    let (srv, port) = start(&pki, &[]);
    let anonymous = Client::new(&pki);
    let known = Client::new(&pki).cert(&pki, "client");
    let stranger = Client::new(&pki).cert(&other, "stranger");
    // yes, the default: a certificate from the CA is required.
    assert_eq!(known.ping(port).unwrap(), "PONG");
    assert!(anonymous.ping(port).is_err());
    assert!(stranger.ping(port).is_err());
    let mut c = srv.raw();
    assert_eq!(c.call(b"CONFIG SET tls-auth-clients no\r\n"), "+OK\r\n");
    assert_eq!(anonymous.ping(port).unwrap(), "PONG");
    // No certificate is asked for, so none is checked.
    assert_eq!(known.ping(port).unwrap(), "PONG");
    assert_eq!(c.call(b"CONFIG SET tls-auth-clients optional\r\n"), "+OK\r\n");
    assert_eq!(anonymous.ping(port).unwrap(), "PONG");
    assert_eq!(known.ping(port).unwrap(), "PONG");
    // A certificate given must verify.
    assert!(stranger.ping(port).is_err());
    assert_eq!(c.call(b"CONFIG SET tls-auth-clients yes\r\n"), "+OK\r\n");
    assert!(anonymous.ping(port).is_err());
    assert_eq!(known.ping(port).unwrap(), "PONG");
    assert_eq!(c.call(b"CONFIG GET tls-auth-clients\r\n"), "*2\r\n$16\r\ntls-auth-clients\r\n$3\r\nyes\r\n");
}

#[test]
fn untrusted_cas_are_rejected() {
    let pki = Pki::new("ca");
    pki.server("server");
    let other = Pki::new("ca-other");
    let (_srv, port) = start(&pki, &["--tls-auth-clients", "no"]);
    // A client that trusts another CA refuses the server's certificate.
    let e = Client::new(&other).ping(port).unwrap_err();
    assert!(e.contains("UnknownIssuer") || e.contains("invalid peer certificate"), "{e}");
    // A CA file without certificates, or missing, stops startup with Redis's lines.
    let junk = pki.path("junk.crt");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let (crt, key) = (pki.path("server.crt"), pki.path("server.key"));
    let base = ["--tls-port", "0", "--tls-replication", "yes", "--tls-cert-file", &crt, "--tls-key-file", &key];
    let log = refuses_to_start(&[&base[..], &["--tls-ca-cert-file", &junk]].concat());
    assert!(log.contains("Failed to configure CA certificate(s) file/directory"), "{log}");
    assert!(log.contains("Failed to configure TLS. Check logs for more info."), "{log}");
    // Client authentication without any CA is refused as Redis refuses it.
    let log = refuses_to_start(&base);
    assert!(log.contains("Either tls-ca-cert-file or tls-ca-cert-dir must be specified"), "{log}");
}

#[test]
fn config_set_reloads_the_certificate() {
    let pki = Pki::new("reload");
    let first = pki.server("server");
    let second = pki.server("renewed");
    let (srv, port) = start(&pki, &["--tls-auth-clients", "no"]);
    let client = Client::new(&pki);
    let served = |c: &Client| c.connect(port).unwrap().conn.peer_certificates().unwrap()[0].to_vec();
    assert_eq!(served(&client), first);
    let mut open = client.connect(port).unwrap();
    let mut c = srv.raw();
    let set =
        format!("CONFIG SET tls-cert-file {} tls-key-file {}\r\n", pki.path("renewed.crt"), pki.path("renewed.key"));
    assert_eq!(c.call(set.as_bytes()), "+OK\r\n");
    // New connections get the new certificate; the open one goes on.
    assert_eq!(served(&client), second);
    assert_eq!(call(&mut open, "PING").unwrap(), "PONG");
    // A bad file: Redis's error, the old configuration (and the parameter's value) stay.
    let bad = c.call(format!("CONFIG SET tls-cert-file {}\r\n", pki.path("missing.crt")).as_bytes());
    assert_eq!(
        bad,
        "-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    assert_eq!(served(&client), second);
    let got = c.call(b"CONFIG GET tls-cert-file\r\n");
    assert!(got.ends_with(&format!("{}\r\n", pki.path("renewed.crt"))), "{got}");
    // A key that does not match the certificate is refused too.
    let mismatched = format!("CONFIG SET tls-key-file {}\r\n", pki.path("server.key"));
    assert!(c.call(mismatched.as_bytes()).contains("Unable to update TLS configuration"));
    assert_eq!(served(&client), second);
}

#[test]
fn protocol_restriction() {
    let pki = Pki::new("proto");
    pki.server("server");
    let (srv, port) = start(&pki, &["--tls-auth-clients", "no", "--tls-protocols", "TLSv1.2"]);
    let v12 = Client::new(&pki).versions(ONLY12);
    let v13 = Client::new(&pki).versions(ONLY13);
    assert_eq!(v12.ping(port).unwrap(), "PONG");
    assert!(v13.ping(port).is_err());
    let mut c = srv.raw();
    assert_eq!(c.call(b"CONFIG SET tls-protocols TLSv1.3\r\n"), "+OK\r\n");
    assert!(v12.ping(port).is_err());
    assert_eq!(v13.ping(port).unwrap(), "PONG");
    // TLS 1.0/1.1 are refused (rustls has neither) and the old setting stays.
    assert!(c.call(b"CONFIG SET tls-protocols \"TLSv1.1 TLSv1.2\"\r\n").contains("Unable to update TLS configuration"));
    assert_eq!(c.call(b"CONFIG GET tls-protocols\r\n"), "*2\r\n$13\r\ntls-protocols\r\n$7\r\nTLSv1.3\r\n");
    assert_eq!(v13.ping(port).unwrap(), "PONG");
    // Cipher suites: a TLS 1.3 suite rustls lacks is refused; one it has restricts the handshake.
    assert!(c.call(b"CONFIG SET tls-ciphersuites TLS_AES_128_CCM_SHA256\r\n").contains("Unable to update"));
    assert_eq!(c.call(b"CONFIG SET tls-ciphersuites TLS_CHACHA20_POLY1305_SHA256\r\n"), "+OK\r\n");
    let s = v13.connect(port).unwrap();
    assert_eq!(s.conn.negotiated_cipher_suite().unwrap().suite(), rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256);
    // At startup a protocol rustls lacks stops the server.
    let (crt, key) = (pki.path("server.crt"), pki.path("server.key"));
    let log = refuses_to_start(&[
        "--tls-port",
        &free_port().to_string(),
        "--tls-cert-file",
        &crt,
        "--tls-key-file",
        &key,
        "--tls-auth-clients",
        "no",
        "--tls-protocols",
        "TLSv1",
    ]);
    assert!(log.contains("TLSv1 is specified in tls-protocols but not supported"), "{log}");
}

#[test]
fn encrypted_pkcs8_keys_need_their_password() {
    let pki = Pki::new("enc");
    pki.server("server");
    // Encrypt server.key as PKCS#8 (PBES2: PBKDF2-SHA256, AES-256-CBC), as `openssl pkcs8 -topk8` does.
    let key = std::fs::read_to_string(pki.path("server.key")).unwrap();
    let (_, doc) = pkcs8::SecretDocument::from_pem(&key).unwrap();
    let info = pkcs8::PrivateKeyInfo::try_from(doc.as_bytes()).unwrap();
    let params = pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, b"saltsalt", &[7u8; 16]).unwrap();
    let enc = info.encrypt_with_params(params, "1234").unwrap();
    let pem = enc.to_pem("ENCRYPTED PRIVATE KEY", pkcs8::LineEnding::LF).unwrap();
    std::fs::write(pki.dir.join("server.key.enc"), pem.as_bytes()).unwrap();
    let (srv, port) = start(&pki, &["--tls-auth-clients", "no"]);
    let mut c = srv.raw();
    let set_key = format!("CONFIG SET tls-key-file {}\r\n", pki.path("server.key.enc"));
    assert!(c.call(set_key.as_bytes()).contains("Unable to update TLS configuration"));
    assert_eq!(c.call(b"CONFIG SET tls-key-file-pass 4321\r\n"), "+OK\r\n");
    assert!(c.call(set_key.as_bytes()).contains("Unable to update TLS configuration"));
    assert_eq!(c.call(b"CONFIG SET tls-key-file-pass 1234\r\n"), "+OK\r\n");
    assert_eq!(c.call(set_key.as_bytes()), "+OK\r\n");
    assert_eq!(Client::new(&pki).ping(port).unwrap(), "PONG");
    assert!(Path::new(&pki.path("server.key.enc")).exists());
}

/// Waits (bounded) until the server on `port` (plaintext) says its link to the primary is up.
fn link_up(port: u16) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let info = common::Raw::connect(port).cmd(&[b"INFO", b"replication"]);
        if info.contains("master_link_status:up") {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "the replica's link never came up:\n{info}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `tls-replication yes`: a Latch replica reaches its primary's TLS port with its client
/// certificate, checking the primary's against the CA, both ways with a stock redis-server.
#[test]
fn replication_over_tls_both_ways_with_redis() {
    let pki = Pki::new("repl");
    pki.server("server");
    pki.client("replica");
    let (crt, key, ca) = (pki.path("server.crt"), pki.path("server.key"), pki.path("ca.crt"));
    let (ccrt, ckey) = (pki.path("replica.crt"), pki.path("replica.key"));
    let tls_side = [
        "--tls-replication",
        "yes",
        "--tls-cert-file",
        &crt,
        "--tls-key-file",
        &key,
        "--tls-ca-cert-file",
        &ca,
        "--tls-client-cert-file",
        &ccrt,
        "--tls-client-key-file",
        &ckey,
    ];
    // A Latch primary that asks for client certificates.
    let (primary, tls_port) = start(&pki, &["--tls-auth-clients", "yes", "--repl-diskless-sync-delay", "0"]);
    let mut p = primary.raw();
    for i in 0..50 {
        p.cmd(&[b"SET", format!("k{i}").as_bytes(), b"v"]);
    }
    p.cmd(&[b"RPUSH", b"list", b"a", b"b"]);
    let replica = Latch::start(&tls_side);
    let mut r = replica.raw();
    assert_eq!(r.cmd(&[b"REPLICAOF", b"127.0.0.1", tls_port.to_string().as_bytes()]), "+OK\r\n");
    link_up(replica.port);
    p.cmd(&[b"SET", b"after", b"sync"]);
    assert_eq!(p.cmd(&[b"WAIT", b"1", b"5000"]), ":1\r\n");
    assert_eq!(r.cmd(&[b"GET", b"after"]), "$4\r\nsync\r\n");
    assert_eq!(r.cmd(&[b"DBSIZE"]), ":52\r\n");
    // Without tls-replication the link speaks plaintext to the TLS port and never comes up.
    let plain = Latch::start(&[]);
    let mut pc = plain.raw();
    pc.cmd(&[b"REPLICAOF", b"127.0.0.1", tls_port.to_string().as_bytes()]);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(pc.cmd(&[b"INFO", b"replication"]).contains("master_link_status:down"));

    // A stock redis-server replica of the Latch primary over TLS, and a Latch replica of a stock
    // redis-server primary over TLS.
    let tp = tls_port.to_string();
    let mut args = tls_side.to_vec();
    args.extend(["--replicaof", "127.0.0.1", &tp]);
    let Some(redis_replica) = common::RedisServer::start_with_or_skip("TLS replication with redis-server", &args)
    else {
        return;
    };
    link_up(redis_replica.port);
    assert_eq!(redis_replica.raw().cmd(&[b"GET", b"after"]), "$4\r\nsync\r\n");
    let redis_tls = free_port().to_string();
    let mut args = tls_side.to_vec();
    args.extend(["--tls-port", &redis_tls, "--tls-auth-clients", "yes"]);
    let redis_primary = common::RedisServer::start_with(&args).expect("a TLS redis-server");
    redis_primary.raw().cmd(&[b"SET", b"from", b"redis"]);
    let replica2 = Latch::start(&tls_side);
    let mut r2 = replica2.raw();
    r2.cmd(&[b"REPLICAOF", b"127.0.0.1", redis_tls.as_bytes()]);
    link_up(replica2.port);
    assert_eq!(r2.cmd(&[b"GET", b"from"]), "$5\r\nredis\r\n");
}
