//! `stream-bench`: drains a stream through consumer groups, as a work queue's workers do, against
//! any Redis-compatible server on loopback (`redis-benchmark` cannot carry the ids XREADGROUP
//! hands out over to XACK). `scripts/types-bench.sh` runs it against Latch and redis-server.
//!
//! One run: the stream `--key` already holds the entries (the script fills it with XADD). The tool
//! creates `--groups` groups at id 0, then starts `--consumers` connections per group. Each one
//! loops: `XREADGROUP GROUP g c COUNT n STREAMS key >`, then one `XACK` of every id it got, sent
//! in the same write as its next XREADGROUP (a pipeline of two), until its group is drained (an
//! empty read). Every entry is delivered once per group, so a run delivers groups × XLEN entries.
//!
//! Output, one line of `name=value` pairs: `delivered`, `acked` (must equal `delivered`: an
//! XACK that acknowledges fewer ids than it names is an error), `secs`, `rate` (delivered / secs),
//! and with `--server-pid`, `server_cpu_s` and `cpu_ns_per_entry` (the server's utime + stime from
//! `/proc/PID/stat` around the run). The groups are destroyed at the end.

use anyhow::{Context, Result, bail, ensure};
use resp::{BytesMut, Frame};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: stream-bench --port PORT [--host 127.0.0.1] --key KEY [--groups 1] [--consumers 1] [--count 100] [--server-pid PID] [--timeout 120]";

struct Opts {
    addr: SocketAddr,
    key: String,
    groups: usize,
    consumers: usize,
    count: usize,
    server_pid: Option<u32>,
    timeout: Duration,
}

fn opts() -> Result<Opts> {
    let mut args = std::env::args().skip(1);
    let (mut host, mut port, mut key) = ("127.0.0.1".to_string(), None, None);
    let (mut groups, mut consumers, mut count, mut server_pid, mut timeout) = (1, 1, 100, None, 120);
    while let Some(a) = args.next() {
        let mut v = || args.next().with_context(|| format!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--host" => host = v()?,
            "--port" => port = Some(v()?.parse::<u16>()?),
            "--key" => key = Some(v()?),
            "--groups" => groups = v()?.parse()?,
            "--consumers" => consumers = v()?.parse()?,
            "--count" => count = v()?.parse()?,
            "--server-pid" => server_pid = Some(v()?.parse()?),
            "--timeout" => timeout = v()?.parse()?,
            _ => bail!("unknown option {a}\n{USAGE}"),
        }
    }
    let ip: IpAddr = host.parse().with_context(|| format!("--host {host}: an IP address"))?;
    ensure!(ip.is_loopback(), "--host {ip} is not a loopback address; this tool only loads local servers");
    ensure!((1..=64).contains(&groups) && (1..=64).contains(&consumers), "--groups and --consumers: 1 to 64");
    ensure!((1..=10_000).contains(&count), "--count: 1 to 10000");
    Ok(Opts {
        addr: SocketAddr::new(ip, port.context(USAGE)?),
        key: key.context(USAGE)?,
        groups,
        consumers,
        count,
        server_pid,
        timeout: Duration::from_secs(timeout),
    })
}

/// One connection: requests written whole, replies read one frame at a time.
struct Conn {
    sock: TcpStream,
    buf: BytesMut,
}

impl Conn {
    fn open(addr: SocketAddr, timeout: Duration) -> Result<Conn> {
        let sock =
            TcpStream::connect_timeout(&addr, Duration::from_secs(5)).with_context(|| format!("connect {addr}"))?;
        sock.set_read_timeout(Some(timeout))?;
        sock.set_nodelay(true)?;
        Ok(Conn { sock, buf: BytesMut::with_capacity(64 * 1024) })
    }

    fn send(&mut self, cmds: &[Vec<Vec<u8>>]) -> Result<()> {
        let mut out = BytesMut::new();
        for c in cmds {
            resp::encode_request(c, &mut out);
        }
        self.sock.write_all(&out)?;
        Ok(())
    }

    fn reply(&mut self) -> Result<Frame> {
        loop {
            if let Some(f) = resp::decode_reply(&mut self.buf).map_err(|e| anyhow::anyhow!("bad reply: {e:?}"))? {
                if let Frame::Error(e) = &f {
                    bail!("server error: {}", String::from_utf8_lossy(e));
                }
                return Ok(f);
            }
            let mut chunk = [0u8; 64 * 1024];
            let n = self.sock.read(&mut chunk).context("read (timeout?)")?;
            ensure!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn call(&mut self, cmd: Vec<Vec<u8>>) -> Result<Frame> {
        self.send(&[cmd])?;
        self.reply()
    }
}

fn cmd(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

/// The ids of an XREADGROUP reply (`[[key, [[id, fields]...]]]`); empty when the group is drained.
fn ids(reply: Frame) -> Result<Vec<Vec<u8>>> {
    let streams = match reply {
        Frame::Null | Frame::NullArray => return Ok(Vec::new()),
        Frame::Array(s) => s,
        Frame::Map(m) => m.into_iter().map(|(k, v)| Frame::Array(vec![k, v])).collect(),
        other => bail!("unexpected XREADGROUP reply {other:?}"),
    };
    let mut out = Vec::new();
    for s in streams {
        let Frame::Array(mut kv) = s else { bail!("unexpected stream element") };
        ensure!(kv.len() == 2, "unexpected stream element");
        let Frame::Array(entries) = kv.pop().expect("two") else { bail!("unexpected entries") };
        for e in entries {
            let Frame::Array(mut e) = e else { bail!("unexpected entry") };
            ensure!(!e.is_empty(), "empty entry");
            match e.swap_remove(0) {
                Frame::Bulk(id) => out.push(id.to_vec()),
                other => bail!("unexpected id {other:?}"),
            }
        }
    }
    Ok(out)
}

/// One consumer: reads, acknowledges with its next read, until the group is drained.
/// Returns (delivered, acked).
fn consume(o: &Opts, group: &str, name: &str) -> Result<(u64, u64)> {
    let mut c = Conn::open(o.addr, o.timeout)?;
    let count = o.count.to_string();
    let read = cmd(&[
        b"XREADGROUP",
        b"GROUP",
        group.as_bytes(),
        name.as_bytes(),
        b"COUNT",
        count.as_bytes(),
        b"STREAMS",
        o.key.as_bytes(),
        b">",
    ]);
    let (mut delivered, mut acked) = (0u64, 0u64);
    let mut pending: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut batch = Vec::new();
        if !pending.is_empty() {
            let mut ack = cmd(&[b"XACK", o.key.as_bytes(), group.as_bytes()]);
            ack.append(&mut pending);
            batch.push(ack);
        }
        let acking = !batch.is_empty();
        let named = batch.first().map_or(0, |a| a.len() - 3) as i64;
        batch.push(read.clone());
        c.send(&batch)?;
        if acking {
            match c.reply()? {
                Frame::Integer(n) if n == named => acked += n as u64,
                other => bail!("XACK of {named} ids answered {other:?}"),
            }
        }
        let got = ids(c.reply()?)?;
        if got.is_empty() {
            return Ok((delivered, acked));
        }
        delivered += got.len() as u64;
        pending = got;
    }
}

/// utime + stime of `pid` in seconds (fields 14 and 15 of `/proc/PID/stat`, after the command name).
fn cpu_secs(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).with_context(|| format!("/proc/{pid}/stat"))?;
    let rest = &stat[stat.rfind(')').context("stat")? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>()? + f[12].parse::<u64>()?;
    Ok(ticks as f64 / 100.0)
}

fn main() -> Result<()> {
    let o = opts()?;
    let mut admin = Conn::open(o.addr, o.timeout)?;
    let groups: Vec<String> = (0..o.groups).map(|g| format!("stream-bench-{g}")).collect();
    for g in &groups {
        admin.call(cmd(&[b"XGROUP", b"DESTROY", o.key.as_bytes(), g.as_bytes()]))?;
        admin.call(cmd(&[b"XGROUP", b"CREATE", o.key.as_bytes(), g.as_bytes(), b"0"]))?;
    }
    let cpu0 = o.server_pid.map(cpu_secs).transpose()?;
    let start = Instant::now();
    let results: Vec<Result<(u64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = groups
            .iter()
            .flat_map(|g| (0..o.consumers).map(move |c| (g, format!("c{c}"))))
            .map(|(g, name)| {
                let o = &o;
                s.spawn(move || consume(o, g, &name))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("consumer thread")).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let cpu1 = o.server_pid.map(cpu_secs).transpose()?;
    let (mut delivered, mut acked) = (0, 0);
    for r in results {
        let (d, a) = r?;
        delivered += d;
        acked += a;
    }
    for g in &groups {
        admin.call(cmd(&[b"XGROUP", b"DESTROY", o.key.as_bytes(), g.as_bytes()]))?;
    }
    ensure!(acked == delivered, "acknowledged {acked} of {delivered} entries");
    let mut line = format!("delivered={delivered} acked={acked} secs={secs:.3} rate={:.0}", delivered as f64 / secs);
    if let (Some(a), Some(b)) = (cpu0, cpu1) {
        let cpu = b - a;
        line += &format!(" server_cpu_s={cpu:.2} cpu_ns_per_entry={:.0}", cpu * 1e9 / delivered.max(1) as f64);
    }
    println!("{line}");
    Ok(())
}
