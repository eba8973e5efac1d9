//! The crash test of `scripts/crash-test.sh`, shortened: writers on connections of their own while
//! the server (`appendfsync always`) is killed with SIGKILL at random moments and restarted on the
//! same directory; after every restart, every write that was acknowledged, in any round so far, must
//! be there. A write in flight when the server died may or may not be.

mod common;

use bytes::BytesMut;
use common::{Latch, TempDir};
use rand::{Rng, SeedableRng};
use resp::Frame;
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const WRITERS: usize = 3;
const ROUNDS: usize = 8;

/// A connection whose failures are values: the server dies under it.
struct Client {
    s: TcpStream,
    buf: BytesMut,
}

impl Client {
    fn connect(port: u16) -> std::io::Result<Client> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.set_nodelay(true)?;
        Ok(Client { s, buf: BytesMut::new() })
    }

    fn call(&mut self, args: &[&[u8]]) -> std::io::Result<Frame> {
        let mut b = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            b.extend_from_slice(a);
            b.extend_from_slice(b"\r\n");
        }
        self.s.write_all(&b)?;
        loop {
            match resp::decode_reply(&mut self.buf) {
                Ok(Some(f)) => return Ok(f),
                Ok(None) => {}
                Err(e) => return Err(std::io::Error::other(format!("bad reply: {e:?}"))),
            }
            let mut chunk = [0u8; 65536];
            let n = self.s.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// One writer's keys and what the server acknowledged of them, across every round.
#[derive(Default)]
struct Writer {
    id: usize,
    seq: u64,
    /// Acknowledged `SET w<id>:<seq> <value>`.
    sets: Vec<(String, String)>,
    /// The last acknowledged `INCR w<id>:ctr`, and INCRs sent since without a reply.
    ctr: i64,
    ctr_unacked: i64,
    /// Acknowledged `RPUSH w<id>:list <seq>`, in order; sent without a reply; found after a restart
    /// without having been acknowledged.
    list: Vec<u64>,
    list_unacked: HashSet<u64>,
    list_landed: HashSet<u64>,
    acks: usize,
}

impl Writer {
    /// Writes until `stop`, or until the connection fails (the server was killed).
    fn run(&mut self, port: u16, stop: &AtomicBool) {
        let Ok(mut c) = Client::connect(port) else { return };
        while !stop.load(Ordering::Relaxed) {
            self.seq += 1;
            let s = self.seq;
            match s % 3 {
                0 => {
                    let (k, v) = (format!("w{}:{s}", self.id), format!("{}:{s}:{:x}", self.id, rand::random::<u64>()));
                    match c.call(&[b"SET", k.as_bytes(), v.as_bytes()]) {
                        Ok(Frame::Simple(ok)) if ok == "OK" => self.sets.push((k, v)),
                        Ok(other) => panic!("SET {k}: {other:?}"),
                        Err(_) => return,
                    }
                }
                1 => {
                    self.ctr_unacked += 1;
                    match c.call(&[b"INCR", format!("w{}:ctr", self.id).as_bytes()]) {
                        Ok(Frame::Integer(n)) => {
                            assert!(n > self.ctr, "w{}:ctr went from {} back to {n}", self.id, self.ctr);
                            (self.ctr, self.ctr_unacked) = (n, 0);
                        }
                        Ok(other) => panic!("INCR: {other:?}"),
                        Err(_) => return,
                    }
                }
                _ => {
                    self.list_unacked.insert(s);
                    match c.call(&[b"RPUSH", format!("w{}:list", self.id).as_bytes(), s.to_string().as_bytes()]) {
                        Ok(Frame::Integer(_)) => {
                            self.list_unacked.remove(&s);
                            self.list.push(s);
                        }
                        Ok(other) => panic!("RPUSH: {other:?}"),
                        Err(_) => return,
                    }
                }
            }
            self.acks += 1;
        }
    }

    /// What of the acknowledged writes the restarted server lacks (empty: nothing lost).
    fn lost(&mut self, c: &mut Client) -> Vec<String> {
        let mut lost = Vec::new();
        for chunk in self.sets.chunks(500) {
            let mut args: Vec<&[u8]> = vec![b"MGET"];
            args.extend(chunk.iter().map(|(k, _)| k.as_bytes()));
            let Frame::Array(got) = c.call(&args).expect("MGET") else { panic!("MGET reply") };
            for ((k, v), g) in chunk.iter().zip(got) {
                if !matches!(&g, Frame::Bulk(b) if b[..] == *v.as_bytes()) {
                    lost.push(format!("SET {k} {v}: now {g:?}"));
                }
            }
        }
        let ctr = match c.call(&[b"GET", format!("w{}:ctr", self.id).as_bytes()]).expect("GET") {
            Frame::Bulk(b) => std::str::from_utf8(&b).unwrap().parse::<i64>().unwrap(),
            _ => 0,
        };
        if ctr < self.ctr {
            lost.push(format!("INCR w{}:ctr acknowledged {}, now {ctr}", self.id, self.ctr));
        }
        assert!(ctr <= self.ctr + self.ctr_unacked, "w{}:ctr is {ctr}: more INCRs than were sent", self.id);
        // From here on the counter starts from what the server has.
        (self.ctr, self.ctr_unacked) = (self.ctr.max(ctr), 0);
        let key = format!("w{}:list", self.id);
        let Frame::Array(items) = c.call(&[b"LRANGE", key.as_bytes(), b"0", b"-1"]).expect("LRANGE") else {
            panic!("LRANGE reply")
        };
        let got: Vec<u64> = items
            .iter()
            .map(|f| match f {
                Frame::Bulk(b) => std::str::from_utf8(b).unwrap().parse().unwrap(),
                other => panic!("list element {other:?}"),
            })
            .collect();
        assert!(got.windows(2).all(|p| p[0] < p[1]), "{key} out of order or doubled: {got:?}");
        let have: HashSet<u64> = got.iter().copied().collect();
        lost.extend(self.list.iter().filter(|e| !have.contains(e)).map(|e| format!("RPUSH {key} {e}")));
        self.list_landed.extend(self.list_unacked.drain().filter(|e| have.contains(e)));
        let acked: HashSet<u64> = self.list.iter().copied().collect();
        let foreign: Vec<&u64> = got.iter().filter(|e| !acked.contains(e) && !self.list_landed.contains(e)).collect();
        assert!(foreign.is_empty(), "{key} holds elements never sent: {foreign:?}");
        lost
    }
}

fn start(dir: &TempDir) -> Latch {
    let l = Latch::start(&["--dir", dir.path(), "--appendonly", "yes", "--appendfsync", "always", "--save", ""]);
    let mut c = Client::connect(l.port).expect("connect");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let Frame::Bulk(info) = c.call(&[b"INFO", b"persistence"]).expect("INFO") else { panic!("INFO reply") };
        if String::from_utf8_lossy(&info).contains("\nloading:0\r") {
            return l;
        }
        assert!(Instant::now() < deadline, "the server did not finish loading");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn sigkill_at_random_moments_loses_no_acknowledged_write() {
    let seed: u64 = std::env::var("CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    eprintln!("CRASH_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = TempDir::new("crash");
    let mut writers: Vec<Writer> = (0..WRITERS).map(|id| Writer { id, ..Writer::default() }).collect();
    let mut server = start(&dir);
    for round in 1..=ROUNDS {
        let stop = Arc::new(AtomicBool::new(false));
        let port = server.port;
        let threads: Vec<_> = writers
            .drain(..)
            .map(|mut w| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    w.run(port, &stop);
                    w
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(rng.random_range(20..150)));
        drop(server); // SIGKILL, while the writers write
        stop.store(true, Ordering::Relaxed);
        writers = threads.into_iter().map(|t| t.join().expect("writer")).collect();
        server = start(&dir);
        let mut c = Client::connect(server.port).expect("connect");
        let lost: Vec<String> = writers.iter_mut().flat_map(|w| w.lost(&mut c)).collect();
        assert!(
            lost.is_empty(),
            "round {round} (CRASH_SEED={seed}): {} acknowledged writes lost after SIGKILL, e.g. {:?}",
            lost.len(),
            &lost[..lost.len().min(5)]
        );
    }
    let acks: usize = writers.iter().map(|w| w.acks).sum();
    // Not a vacuous pass: the writers did write between the kills.
    assert!(acks >= ROUNDS * WRITERS, "only {acks} writes were acknowledged in {ROUNDS} rounds");
    eprintln!("{ROUNDS} rounds, {acks} acknowledged writes, none lost");
}
