//! `pubsub-bench`: a pub/sub load generator for any Redis-compatible server on loopback
//! (`redis-benchmark` cannot subscribe). `scripts/pubsub-bench.sh` runs it against Latch and
//! redis-server; `docs/pubsub.md` has what it measures and the figures.
//!
//! One run: `--subscribers` connections SUBSCRIBE to one channel (or, with `--mode pattern`,
//! PSUBSCRIBE to a pattern matching it); once every subscription is confirmed, one publisher
//! connection sends `--messages` PUBLISH commands of a `--payload`-byte message, pipelined in
//! batches of `--batch`, while a second thread reads the publisher's replies. Each subscriber counts
//! the messages it reads and stops at `--messages`. The publisher keeps at most `--window` messages
//! ahead of the slowest subscriber, so no server queues more than that per subscriber and none goes
//! over the default pubsub `client-output-buffer-limit`: the rate measured is one the server can
//! sustain, not how fast it can fill its buffers.
//!
//! Output, one line of `name=value` pairs: `delivered` (messages counted by all subscribers),
//! `secs` (from the first message any subscriber read to the last one), `rate` (delivered / secs),
//! and with `--server-pid`, `server_cpu_s` (the server's utime + stime from `/proc/PID/stat`,
//! taken after the subscriptions and after the last delivery) and `cpu_ns_per_msg`; also the
//! generator's own CPU (`client_cpu_s`), since it shares the machine with the server. A subscriber
//! that is disconnected, a wrong message, or the `--timeout` passing is an error (exit status 1),
//! never a partial figure.

use anyhow::{Context, Result, anyhow, bail, ensure};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const USAGE: &str = "usage: pubsub-bench --port PORT [--host 127.0.0.1] [--subscribers 1] [--mode channel|pattern]
       [--messages 100000] [--payload 64] [--batch 100] [--window N] [--threads 1]
       [--server-pid PID] [--clk-tck 100] [--timeout 120]";

/// What the command line asks for.
struct Opts {
    addr: SocketAddr,
    subscribers: usize,
    pattern: bool,
    messages: u64,
    payload: usize,
    batch: u64,
    /// Messages the publisher may be ahead of the slowest subscriber; 0: chosen from the sizes.
    window: u64,
    threads: usize,
    server_pid: Option<u32>,
    clk_tck: u64,
    timeout: Duration,
}

const CHANNEL: &[u8] = b"bench.channel";
const PATTERN: &[u8] = b"bench.*";

fn parse_opts() -> Result<Opts> {
    let mut o = Opts {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        subscribers: 1,
        pattern: false,
        messages: 100_000,
        payload: 64,
        batch: 100,
        window: 0,
        threads: 1,
        server_pid: None,
        clk_tck: 100,
        timeout: Duration::from_secs(120),
    };
    let mut host: IpAddr = [127, 0, 0, 1].into();
    let mut port = None;
    let mut args = std::env::args().skip(1);
    while let Some(name) = args.next() {
        if name == "-h" || name == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let value = args.next().ok_or_else(|| anyhow!("{name} needs a value\n{USAGE}"))?;
        let bad = || anyhow!("bad value for {name}: {value:?}");
        match name.as_str() {
            "--host" => host = value.parse().map_err(|_| bad())?,
            "--port" => port = Some(value.parse::<u16>().map_err(|_| bad())?),
            "--subscribers" => o.subscribers = value.parse().map_err(|_| bad())?,
            "--mode" => {
                o.pattern = match value.as_str() {
                    "channel" => false,
                    "pattern" => true,
                    _ => return Err(bad()),
                }
            }
            "--messages" => o.messages = value.parse().map_err(|_| bad())?,
            "--payload" => o.payload = value.parse().map_err(|_| bad())?,
            "--batch" => o.batch = value.parse().map_err(|_| bad())?,
            "--window" => o.window = value.parse().map_err(|_| bad())?,
            "--threads" => o.threads = value.parse().map_err(|_| bad())?,
            "--server-pid" => o.server_pid = Some(value.parse().map_err(|_| bad())?),
            "--clk-tck" => o.clk_tck = value.parse().map_err(|_| bad())?,
            "--timeout" => o.timeout = Duration::from_secs(value.parse().map_err(|_| bad())?),
            _ => bail!("unknown option {name}\n{USAGE}"),
        }
    }
    // Only local servers: this measures a server on the same machine, and must never load a
    // remote one by mistake.
    ensure!(host.is_loopback(), "{host} is not a loopback address");
    o.addr = SocketAddr::new(host, port.ok_or_else(|| anyhow!("--port is required\n{USAGE}"))?);
    ensure!(o.subscribers >= 1, "--subscribers must be at least 1");
    ensure!(o.messages >= 1 && o.batch >= 1 && o.threads >= 1 && o.clk_tck >= 1, "counts must be at least 1");
    if o.window == 0 {
        // At most ~1 MiB queued per subscriber and ~64 MiB over all of them, at least 2 batches.
        let msg = (o.payload + 64) as u64;
        let per_sub = (1 << 20) / msg;
        let total = (64 << 20) / (msg * o.subscribers as u64);
        o.window = per_sub.min(total).max(2 * o.batch);
    }
    Ok(o)
}

/// One RESP2 reply found at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
enum Reply<'a> {
    /// An array of bulk strings (and integers, as in subscription confirmations): its length in
    /// bytes, its first element, its last element (a bulk's bytes or an integer's digits).
    Array { used: usize, first: &'a [u8], last: &'a [u8] },
    /// An integer: its length in bytes and value.
    Int { used: usize, value: i64 },
}

/// Parses `<type><digits>\r\n` at `at`: the number and the position after the line; None if the
/// line is not complete yet.
fn header(buf: &[u8], at: usize) -> Result<Option<(i64, usize)>> {
    let Some(end) = memchr::memchr(b'\n', buf.get(at..).unwrap_or_default()) else { return Ok(None) };
    let line = &buf[at + 1..at + end];
    let line = line.strip_suffix(b"\r").ok_or_else(|| anyhow!("line without CR"))?;
    let s = std::str::from_utf8(line)?;
    Ok(Some((s.parse().with_context(|| format!("bad number {s:?}"))?, at + end + 1)))
}

/// Parses the reply at the start of `buf`; None when it is not complete yet. Knows only what a
/// publisher and a subscriber are sent: integers, errors (an error), arrays of bulks and integers.
fn parse(buf: &[u8]) -> Result<Option<Reply<'_>>> {
    match buf.first() {
        None => Ok(None),
        Some(b':') => Ok(header(buf, 0)?.map(|(value, used)| Reply::Int { used, value })),
        Some(b'*') => {
            let Some((n, mut at)) = header(buf, 0)? else { return Ok(None) };
            ensure!(n >= 1, "unexpected array of {n}");
            let (mut first, mut last): (&[u8], &[u8]) = (&[], &[]);
            for i in 0..n {
                let start = at;
                let elem: &[u8] = match buf.get(at) {
                    None => return Ok(None),
                    Some(b'$') => {
                        let Some((len, data)) = header(buf, at)? else { return Ok(None) };
                        if len < 0 {
                            at = data;
                            &[]
                        } else {
                            let end = data + len as usize;
                            if buf.len() < end + 2 {
                                return Ok(None);
                            }
                            at = end + 2;
                            &buf[data..end]
                        }
                    }
                    Some(b':') => {
                        let Some((_, next)) = header(buf, at)? else { return Ok(None) };
                        at = next;
                        &buf[start + 1..next - 2]
                    }
                    Some(t) => bail!("unexpected element type {:?}", *t as char),
                };
                if i == 0 {
                    first = elem;
                }
                last = elem;
            }
            Ok(Some(Reply::Array { used: at, first, last }))
        }
        Some(b'-') => {
            let end = memchr::memchr(b'\n', buf).unwrap_or(buf.len());
            bail!("error reply: {}", String::from_utf8_lossy(&buf[..end]).trim_end())
        }
        Some(t) => bail!("unexpected reply type {:?}", *t as char),
    }
}

/// One subscriber's progress, read by the publisher (window) and at the end (figures).
#[derive(Default)]
struct Progress {
    count: AtomicU64,
    /// Nanoseconds since the run's start at the first and the last message read.
    first_ns: AtomicU64,
    last_ns: AtomicU64,
}

fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut b = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        b.extend_from_slice(a);
        b.extend_from_slice(b"\r\n");
    }
    b
}

/// Subscribes, reports the confirmation through `ready`, then reads `o.messages` messages.
async fn subscriber(
    o: Arc<Opts>,
    start: Instant,
    me: Arc<Progress>,
    ready: tokio::sync::mpsc::Sender<()>,
) -> Result<()> {
    let mut s = tokio::net::TcpStream::connect(o.addr).await.context("subscriber connect")?;
    s.set_nodelay(true)?;
    let (sub, word): (&[u8], &[u8]) = if o.pattern { (b"PSUBSCRIBE", b"pmessage") } else { (b"SUBSCRIBE", b"message") };
    s.write_all(&command(&[sub, if o.pattern { PATTERN } else { CHANNEL }])).await?;
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut off = 0;
    let mut confirmed = false;
    let mut count = 0u64;
    while count < o.messages {
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(64 * 1024);
        }
        // Into the spare capacity, without zeroing it first.
        let n = s.read_buf(&mut buf).await?;
        if n == 0 {
            bail!("subscriber disconnected after {count} of {} messages", o.messages);
        }
        let mut got = 0;
        while let Some(r) = parse(&buf[off..])? {
            let Reply::Array { used, first, last } = r else { bail!("subscriber got {r:?}") };
            off += used;
            if !confirmed {
                ensure!(first.eq_ignore_ascii_case(sub), "expected a confirmation, got {:?}", first);
                confirmed = true;
                ready.send(()).await.ok();
                continue;
            }
            ensure!(first == word, "expected a {} message, got {:?}", String::from_utf8_lossy(word), first);
            ensure!(last.len() == o.payload, "payload of {} bytes, expected {}", last.len(), o.payload);
            got += 1;
        }
        buf.drain(..off);
        off = 0;
        if got > 0 {
            let now = start.elapsed().as_nanos() as u64;
            if count == 0 {
                me.first_ns.store(now, Ordering::Relaxed);
            }
            count += got;
            me.last_ns.store(now, Ordering::Relaxed);
            me.count.store(count, Ordering::Release);
        }
    }
    ensure!(count == o.messages, "subscriber read {count} messages, {} published", o.messages);
    Ok(())
}

/// Publishes `o.messages` messages in pipelined batches, at most `o.window` ahead of the slowest
/// subscriber; another thread reads the replies and returns the sum of the receiver counts.
fn publisher(o: &Opts, subs: &[Arc<Progress>], failed: &AtomicBool, deadline: Instant) -> Result<u64> {
    let mut w = std::net::TcpStream::connect(o.addr).context("publisher connect")?;
    w.set_nodelay(true)?;
    let mut r = w.try_clone()?;
    let total = o.messages;
    let reader = std::thread::spawn(move || -> Result<u64> {
        let mut buf = vec![0u8; 64 * 1024];
        let (mut len, mut replies, mut receivers) = (0usize, 0u64, 0u64);
        while replies < total {
            if len == buf.len() {
                buf.resize(len * 2, 0);
            }
            let n = r.read(&mut buf[len..])?;
            ensure!(n > 0, "publisher disconnected after {replies} replies");
            len += n;
            let mut off = 0;
            while let Some(reply) = parse(&buf[off..len])? {
                let Reply::Int { used, value } = reply else { bail!("PUBLISH answered {reply:?}") };
                off += used;
                receivers += value as u64;
                replies += 1;
            }
            buf.copy_within(off..len, 0);
            len -= off;
        }
        Ok(receivers)
    });
    let payload = vec![b'x'; o.payload];
    let one = command(&[b"PUBLISH", CHANNEL, &payload]);
    let batch: Vec<u8> = one.repeat(o.batch as usize);
    let mut sent = 0u64;
    while sent < total {
        let n = o.batch.min(total - sent);
        loop {
            let slowest = subs.iter().map(|p| p.count.load(Ordering::Acquire)).min().unwrap_or(0);
            if sent + n <= slowest + o.window {
                break;
            }
            if failed.load(Ordering::Relaxed) {
                bail!("a subscriber failed");
            }
            ensure!(Instant::now() < deadline, "timed out: the slowest subscriber read {slowest} of {sent} sent");
            std::thread::sleep(Duration::from_micros(200));
        }
        w.write_all(&batch[..one.len() * n as usize])?;
        sent += n;
    }
    reader.join().map_err(|_| anyhow!("publisher reader panicked"))?
}

/// utime + stime of `pid` in clock ticks (fields 14 and 15 of `/proc/PID/stat`, counted after the
/// parenthesised command name, which may hold spaces).
fn cpu_ticks(pid: &str) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).with_context(|| format!("/proc/{pid}/stat"))?;
    let rest = &stat[stat.rfind(')').ok_or_else(|| anyhow!("bad stat"))? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // rest starts at field 3 (state): utime is field 14, stime field 15.
    Ok(f[11].parse::<u64>()? + f[12].parse::<u64>()?)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("pubsub-bench: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let o = Arc::new(parse_opts()?);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(o.threads).enable_all().build()?;
    let start = Instant::now();
    let deadline = start + o.timeout;
    let subs: Vec<Arc<Progress>> = (0..o.subscribers).map(|_| Arc::default()).collect();
    let failed = Arc::new(AtomicBool::new(false));
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(o.subscribers);
    let tasks: Vec<_> = subs
        .iter()
        .map(|p| {
            let (o, p, ready, failed) = (o.clone(), p.clone(), ready_tx.clone(), failed.clone());
            rt.spawn(async move {
                let r = tokio::time::timeout_at(deadline.into(), subscriber(o, start, p, ready))
                    .await
                    .unwrap_or_else(|_| Err(anyhow!("timed out")));
                if r.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                r
            })
        })
        .collect();
    drop(ready_tx);
    let confirmed = rt.block_on(async {
        let mut n = 0;
        while n < o.subscribers {
            match tokio::time::timeout_at(deadline.into(), ready_rx.recv()).await {
                Ok(Some(())) => n += 1,
                _ => break,
            }
        }
        n
    });
    if confirmed < o.subscribers {
        for t in tasks {
            rt.block_on(t)??;
        }
        bail!("only {confirmed} of {} subscriptions were confirmed", o.subscribers);
    }
    let pid = o.server_pid.map(|p| p.to_string());
    let self_before = cpu_ticks("self")?;
    let server_before = pid.as_deref().map(cpu_ticks).transpose()?;
    let published = publisher(&o, &subs, &failed, deadline);
    let mut errors = Vec::new();
    for t in tasks {
        if let Err(e) = rt.block_on(t).map_err(anyhow::Error::from).and_then(|r| r) {
            errors.push(format!("{e:#}"));
        }
    }
    let server_after = pid.as_deref().map(cpu_ticks).transpose()?;
    let self_after = cpu_ticks("self")?;
    if !errors.is_empty() {
        errors.sort();
        errors.dedup();
        bail!("{} subscriber(s) failed: {}", o.subscribers - confirmed + errors.len(), errors.join("; "));
    }
    let receivers = published?;
    let delivered: u64 = subs.iter().map(|p| p.count.load(Ordering::Acquire)).sum();
    let expected = o.messages * o.subscribers as u64;
    ensure!(delivered == expected, "delivered {delivered}, expected {expected}");
    ensure!(receivers == expected, "PUBLISH replies add up to {receivers} receivers, expected {expected}");
    let first = subs.iter().map(|p| p.first_ns.load(Ordering::Relaxed)).min().unwrap_or(0);
    let last = subs.iter().map(|p| p.last_ns.load(Ordering::Relaxed)).max().unwrap_or(0);
    let secs = (last.saturating_sub(first)) as f64 / 1e9;
    let tick = 1.0 / o.clk_tck as f64;
    let mut line = format!(
        "subscribers={} mode={} messages={} payload={} window={} delivered={delivered} secs={secs:.4} rate={:.0} client_cpu_s={:.2}",
        o.subscribers,
        if o.pattern { "pattern" } else { "channel" },
        o.messages,
        o.payload,
        o.window,
        if secs > 0.0 { delivered as f64 / secs } else { 0.0 },
        (self_after - self_before) as f64 * tick,
    );
    if let (Some(b), Some(a)) = (server_before, server_after) {
        let cpu = (a - b) as f64 * tick;
        line += &format!(" server_cpu_s={cpu:.2} cpu_ns_per_msg={:.1}", cpu * 1e9 / delivered as f64);
    }
    println!("{line}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_messages_confirmations_and_integers() {
        let m = b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n";
        assert_eq!(parse(m).unwrap(), Some(Reply::Array { used: m.len(), first: b"message", last: b"hi" }));
        for cut in 0..m.len() {
            assert_eq!(parse(&m[..cut]).unwrap(), None, "cut at {cut}");
        }
        let c = b"*3\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n:1\r\nrest";
        assert_eq!(parse(c).unwrap(), Some(Reply::Array { used: c.len() - 4, first: b"psubscribe", last: b"1" }));
        assert_eq!(parse(b":1000\r\n:1").unwrap(), Some(Reply::Int { used: 7, value: 1000 }));
        assert!(parse(b"-ERR no\r\n").is_err());
        assert_eq!(parse(b"*3\r\n$-1\r\n").unwrap(), None);
    }

    #[test]
    fn reads_cpu_ticks_of_self() {
        assert!(cpu_ticks("self").is_ok());
    }
}
