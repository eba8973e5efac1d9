//! A blocking connection to the server: send a command, read one reply.
//!
//! Error texts are the ones hiredis gives redis-cli (`Connection refused`,
//! `Server closed the connection`, ...), because scripts match on them.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

use resp::{BytesMut, Frame};

/// Why a command's reply could not be read.
#[derive(Debug)]
pub enum ConnError {
    /// A socket error (connection reset, broken pipe, ...).
    Io(io::Error),
    /// The server closed the connection.
    Eof,
    /// The server sent bytes that are not RESP.
    Protocol(String),
}

impl ConnError {
    /// True if the connection was lost (reset, broken pipe or closed), as opposed to a protocol
    /// error: an interactive session then reconnects on the next command.
    pub fn is_disconnect(&self) -> bool {
        match self {
            ConnError::Eof => true,
            ConnError::Io(e) => matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe),
            ConnError::Protocol(_) => false,
        }
    }
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Io(e) => f.write_str(&io_error_text(e)),
            ConnError::Eof => f.write_str("Server closed the connection"),
            ConnError::Protocol(m) => f.write_str(m),
        }
    }
}

/// The C library's text for an IO error (`strerror`), without Rust's " (os error N)" suffix
/// and the resolver's prefix.
pub fn io_error_text(e: &io::Error) -> String {
    let s = e.to_string();
    let s = s.strip_prefix("failed to lookup address information: ").unwrap_or(&s);
    match s.rfind(" (os error ") {
        Some(n) => s[..n].to_string(),
        None => s.to_string(),
    }
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

/// Why a connection could not be opened.
#[derive(Debug)]
pub enum ConnectError {
    /// The socket could not be connected.
    Io(io::Error),
    /// The TLS set-up or handshake failed (redis-cli: "Could not negotiate a TLS connection: ...").
    Tls(String),
}

/// An open connection with its read buffer.
pub struct Conn {
    stream: Stream,
    buf: BytesMut,
}

impl Conn {
    /// Connects over TCP (every address `host` resolves to is tried in turn).
    pub fn tcp(host: &str, port: u16) -> io::Result<Conn> {
        let s = TcpStream::connect((host, port))?;
        s.set_nodelay(true)?;
        Ok(Conn::new(Stream::Tcp(s)))
    }

    /// Connects over TCP and TLS (`--tls`), with the handshake done.
    pub fn tls(host: &str, port: u16, t: &crate::opts::TlsInfo) -> Result<Conn, ConnectError> {
        let client = crate::tls::client(host, t).map_err(ConnectError::Tls)?;
        let s = TcpStream::connect((host, port)).map_err(ConnectError::Io)?;
        s.set_nodelay(true).map_err(ConnectError::Io)?;
        let mut s = rustls::StreamOwned::new(client, s);
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).map_err(|e| ConnectError::Tls(e.to_string()))?;
        }
        Ok(Conn::new(Stream::Tls(Box::new(s))))
    }

    /// Connects to a Unix socket.
    pub fn unix(path: &str) -> io::Result<Conn> {
        Ok(Conn::new(Stream::Unix(UnixStream::connect(path)?)))
    }

    fn new(stream: Stream) -> Conn {
        Conn { stream, buf: BytesMut::with_capacity(16 * 1024) }
    }

    /// Sends one command (a RESP array of bulk strings).
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<(), ConnError> {
        let mut out = BytesMut::new();
        resp::encode_request(args, &mut out);
        let r = match &mut self.stream {
            Stream::Tcp(s) => s.write_all(&out),
            Stream::Unix(s) => s.write_all(&out),
            Stream::Tls(s) => s.write_all(&out).and_then(|_| s.flush()),
        };
        r.map_err(ConnError::Io)
    }

    /// Reads the next reply, blocking until it is complete.
    pub fn read(&mut self) -> Result<Frame, ConnError> {
        loop {
            match resp::decode_reply(&mut self.buf) {
                Ok(Some(f)) => return Ok(f),
                Ok(None) => {}
                Err(e) => return Err(ConnError::Protocol(e.0)),
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = loop {
                let r = match &mut self.stream {
                    Stream::Tcp(s) => s.read(&mut chunk),
                    Stream::Unix(s) => s.read(&mut chunk),
                    Stream::Tls(s) => match s.read(&mut chunk) {
                        // A peer that closes without close_notify: closed, as hiredis reports it.
                        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                        r => r,
                    },
                };
                match r {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r.map_err(ConnError::Io)?,
                }
            };
            if n == 0 {
                return Err(ConnError::Eof);
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends a command and reads its reply.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Frame, ConnError> {
        self.send(args)?;
        self.read()
    }
}
