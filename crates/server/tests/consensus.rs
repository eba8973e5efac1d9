//! Consensus mode (docs/consensus.md): three real `latch-server` processes on 127.0.0.1 form a
//! Raft group. Leader election, MOVED from followers, the one-shard CLUSTER views, a lock that
//! survives `kill -9` of the leader, fencing tokens across a failover, and a node restarted from
//! its `--dir`. Every wait polls with a deadline; no sleep decides an outcome.

mod common;

use common::group::{DEADLINE, Group, call, info};
use common::{Raw, TempDir, free_port};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// The owner-checked lock release: delete the key only if it still holds the caller's token.
const RELEASE: &str = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";

/// A connection kept open across commands (MULTI ... EXEC, WATCH).
struct Session(Raw);

impl Session {
    fn open(port: u16) -> Session {
        let r = Raw::connect(port);
        r.s.set_read_timeout(Some(Duration::from_secs(15))).expect("timeout");
        Session(r)
    }

    /// Sends one command and returns its reply's bytes as text.
    fn cmd(&mut self, args: &[&str]) -> String {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.0.cmd(&args)
    }
}

/// `call` that must get an answer.
fn must(port: u16, args: &[&str]) -> String {
    call(port, args).unwrap_or_else(|| panic!("no reply from port {port} to {args:?}"))
}

/// The integer of a `:n` reply.
fn int(reply: &str) -> i64 {
    reply
        .strip_prefix(':')
        .and_then(|r| r.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("not an integer: {reply:?}"))
}

#[test]
fn a_group_elects_a_leader_and_followers_send_clients_to_it() {
    let g = Group::start("elect");
    let leader = g.leader();
    let lport = g.port(leader);
    let follower = g.nodes.iter().find(|n| n.id != leader).expect("follower");

    // Writes and reads on a follower: MOVED to the leader with the key's Redis Cluster slot.
    assert_eq!(must(follower.port, &["SET", "foo", "bar"]), format!("-MOVED 12182 127.0.0.1:{lport}\r\n"));
    assert_eq!(must(follower.port, &["GET", "foo"]), format!("-MOVED 12182 127.0.0.1:{lport}\r\n"));
    // On the leader the write is acknowledged after commit, and the read sees it.
    assert_eq!(must(lport, &["SET", "foo", "bar"]), "+OK\r\n");
    assert_eq!(must(lport, &["GET", "foo"]), "$3\r\nbar\r\n");
    assert_eq!(int(&must(lport, &["INCR", "counter"])), 1);
    // Every node applied it: the follower's own keyspace has both keys once it caught up.
    let deadline = Instant::now() + DEADLINE;
    while !must(follower.port, &["INFO", "keyspace"]).contains("db0:keys=2") {
        assert!(Instant::now() < deadline, "the follower never applied the writes");
        std::thread::sleep(Duration::from_millis(50));
    }
    // After READONLY a follower serves reads from its own data (Redis Cluster's replica reads);
    // writes still go to the leader; READWRITE and RESET end it.
    let mut r = Session::open(follower.port);
    assert_eq!(r.cmd(&["READONLY"]), "+OK\r\n");
    assert_eq!(r.cmd(&["GET", "foo"]), "$3\r\nbar\r\n");
    assert_eq!(r.cmd(&["INCR", "counter"]), format!("-MOVED {} 127.0.0.1:{lport}\r\n", raft::key_slot(b"counter")));
    assert_eq!(r.cmd(&["READWRITE"]), "+OK\r\n");
    assert_eq!(r.cmd(&["GET", "foo"]), format!("-MOVED 12182 127.0.0.1:{lport}\r\n"));
    assert_eq!(r.cmd(&["READONLY"]), "+OK\r\n");
    assert_eq!(r.cmd(&["RESET"]), "+RESET\r\n");
    assert_eq!(r.cmd(&["GET", "foo"]), format!("-MOVED 12182 127.0.0.1:{lport}\r\n"));

    // What consensus mode cannot run yet is refused, not run locally.
    assert_eq!(must(lport, &["SCRIPT", "KILL"]), "-ERR SCRIPT KILL is not supported in consensus mode\r\n");
    assert_eq!(
        must(follower.port, &["BLPOP", "q", "0"]),
        format!("-MOVED {} 127.0.0.1:{lport}\r\n", raft::key_slot(b"q"))
    );
    assert_eq!(
        must(lport, &["FENCED", "f", "1", "LOCK", "l", "me", "1000", "WAIT", "10"]),
        "-ERR FENCED of a blocking command is not supported in consensus mode\r\n"
    );

    // One shard owning every slot, the leader its master, on every node. A node names the leader
    // once it heard from it; on a busy machine an election may also come in between.
    let names_leader = |n: &common::group::Node, lport: u16| {
        must(n.port, &["CLUSTER", "SLOTS"])
            .starts_with(&format!("*1\r\n*5\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:{lport}\r\n"))
    };
    let lport = loop_until("every node naming the leader", || {
        let lport = g.port(g.leader());
        g.nodes.iter().all(|n| names_leader(n, lport)).then_some(lport)
    });
    for n in &g.nodes {
        assert!(names_leader(n, lport), "node {}: {:?}", n.id, must(n.port, &["CLUSTER", "SLOTS"]));
        let nodes = must(n.port, &["CLUSTER", "NODES"]);
        let flags: Vec<&str> = nodes.lines().skip(1).filter_map(|l| l.split(' ').nth(2)).collect();
        assert_eq!(flags.iter().filter(|f| f.split(',').any(|f| f == "master")).count(), 1, "{nodes}");
        assert_eq!(flags.iter().filter(|f| f.split(',').any(|f| f == "slave")).count(), 2, "{nodes}");
        assert_eq!(flags.iter().filter(|f| f.starts_with("myself")).count(), 1, "{nodes}");
        assert!(nodes.contains(&format!("127.0.0.1:{lport}@")), "{nodes}");
        assert!(must(n.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok"));
        assert_eq!(must(n.port, &["CLUSTER", "MYID"]), format!("$40\r\n{:040x}\r\n", n.id));
        assert!(must(n.port, &["CLUSTER", "SHARDS"]).contains("master"));
    }

    // INFO consensus on the leader: its role, the peers' match indexes up to the commit index.
    let i = info(lport).expect("info");
    assert_eq!(i["consensus_role"], "leader");
    assert_eq!(i["consensus_leader_addr"], format!("127.0.0.1:{lport}"));
    // Raft time started at the first leader's wall clock and runs with it.
    let unix_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let raft_ms: i64 = i["consensus_raft_time_ms"].parse().unwrap();
    assert!((unix_ms - raft_ms).abs() < 60_000, "raft time {raft_ms}, wall clock {unix_ms}");
    let commit: i64 = i["consensus_commit_index"].parse().unwrap();
    assert!(commit >= 3, "{i:?}");
    assert!(i["consensus_applied_index"].parse::<i64>().unwrap() >= commit);
    assert_eq!(i.keys().filter(|k| k.starts_with("consensus_peer")).count(), 3);
}

#[test]
fn a_lock_and_its_fencing_tokens_survive_kill_9_of_the_leader() {
    let mut g = Group::start("failover");
    let old = g.leader();
    let oport = g.port(old);
    assert_eq!(must(oport, &["SET", "lock", "tok", "NX", "PX", "10000"]), "+OK\r\n");
    assert_eq!(must(oport, &["SET", "lock", "other", "NX", "PX", "10000"]), "$-1\r\n");
    let mut before = Vec::new();
    for k in ["a", "b", "c"] {
        before.push(int(&must(oport, &["LOCK", k, "owner", "60000"])));
    }
    assert!(before.windows(2).all(|w| w[0] < w[1]), "tokens not increasing: {before:?}");

    g.node(old).kill();
    let new = g.leader();
    assert_ne!(new, old);
    let nport = g.port(new);
    // The lock acknowledged by the old leader is there, held by the same owner, with its TTL
    // counting from raft time (which stood still during the failover).
    assert_eq!(must(nport, &["GET", "lock"]), "$3\r\ntok\r\n");
    let ttl = int(&must(nport, &["PTTL", "lock"]));
    assert!(ttl > 0 && ttl <= 10000, "{ttl}");
    assert_eq!(must(nport, &["SET", "lock", "mine", "NX", "PX", "10000"]), "$-1\r\n");
    // Native locks: still held, and the next grant's token is above every earlier one.
    assert_eq!(must(nport, &["LOCK", "a", "someone-else", "60000"]), "$-1\r\n");
    let after = int(&must(nport, &["LOCK", "d", "owner", "60000"]));
    assert!(before.iter().all(|&t| t < after), "token {after} after the failover, {before:?} before");
    // The survivors agree on the lock's holder.
    let info = must(nport, &["LOCKINFO", "a"]);
    assert!(info.contains(&before[0].to_string()), "{info}");
}

/// A request sent now whose reply is read later (a `LOCK ... WAIT` that queues).
fn send(port: u16, args: &[&str]) -> Session {
    let mut s = Session::open(port);
    s.0.s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    s.0.send(&common::encode(args));
    s
}

/// Polls `LOCKINFO key` on `port` until it shows `waiters` waiters.
fn wait_waiters(port: u16, key: &str, waiters: i64) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let r = must(port, &["LOCKINFO", key]);
        if r.contains(&format!("waiters\r\n:{waiters}\r\n")) {
            return r;
        }
        assert!(Instant::now() < deadline, "LOCKINFO {key} never showed {waiters} waiters: {r:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn lock_waiters_are_granted_in_order_and_keep_their_places_through_a_failover() {
    let mut g = Group::start("waiters");
    let old = g.leader();
    let oport = g.port(old);
    let t1 = int(&must(oport, &["LOCK", "l", "a", "10000"]));
    let mut b = send(oport, &["LOCK", "l", "b", "10000", "WAIT", "20000"]);
    wait_waiters(oport, "l", 1);
    let _c = send(oport, &["LOCK", "l", "c", "10000", "WAIT", "0"]);
    wait_waiters(oport, "l", 2);
    // The release grants the first waiter in the same entry: b, with a later token.
    assert_eq!(must(oport, &["UNLOCK", "l", "a"]), ":1\r\n");
    let t2 = int(&String::from_utf8(b.0.reply_bytes()).unwrap());
    assert!(t2 > t1, "{t2} after {t1}");
    let _d = send(oport, &["LOCK", "l", "d", "10000", "WAIT", "0"]);
    wait_waiters(oport, "l", 2);
    assert!(wait_waiters(oport, "l", 2).contains("$1\r\nb\r\n"));
    // Every node holds the queue (INFO's count is the node's own).
    for n in &g.nodes {
        let deadline = Instant::now() + DEADLINE;
        while info(n.port).and_then(|i| i.get("consensus_lock_waiters").cloned()).as_deref() != Some("2") {
            assert!(Instant::now() < deadline, "node {} does not hold the two waiters", n.id);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    // The leader dies with c's and d's connections. They ask again on the new leader, d first:
    // each takes its old place, so c is granted before d.
    g.node(old).kill();
    let new = g.leader();
    let nport = g.port(new);
    let mut d = send(nport, &["LOCK", "l", "d", "10000", "WAIT", "30000"]);
    let mut c = send(nport, &["LOCK", "l", "c", "10000", "WAIT", "30000"]);
    std::thread::sleep(Duration::from_millis(200));
    wait_waiters(nport, "l", 2);
    assert_eq!(must(nport, &["UNLOCK", "l", "b"]), ":1\r\n");
    let t3 = int(&String::from_utf8(c.0.reply_bytes()).unwrap());
    assert!(t3 > t2, "{t3} after {t2}");
    assert!(must(nport, &["LOCKINFO", "l"]).contains("$1\r\nc\r\n"));
    assert_eq!(must(nport, &["UNLOCK", "l", "c"]), ":1\r\n");
    let t4 = int(&String::from_utf8(d.0.reply_bytes()).unwrap());
    assert!(t4 > t3, "{t4} after {t3}");

    // A waiter whose deadline passes gets nil and is never granted; one whose client goes away
    // leaves the queue.
    let mut e = send(nport, &["LOCK", "l", "e", "10000", "WAIT", "300"]);
    assert_eq!(String::from_utf8(e.0.reply_bytes()).unwrap(), "$-1\r\n");
    let f = send(nport, &["LOCK", "l", "f", "10000", "WAIT", "0"]);
    wait_waiters(nport, "l", 1);
    drop(f);
    wait_waiters(nport, "l", 0);
    assert_eq!(must(nport, &["UNLOCK", "l", "d"]), ":1\r\n");
    assert_eq!(must(nport, &["EXISTS", "l"]), ":0\r\n");

    // A waiter on a key that came to hold another type, with no TTL left anywhere, still ends at
    // its deadline (raft time goes on for it).
    assert!(int(&must(nport, &["LOCK", "m", "a", "10000"])) > 0);
    let mut h = send(nport, &["LOCK", "m", "h", "10000", "WAIT", "500"]);
    wait_waiters(nport, "m", 1);
    assert_eq!(must(nport, &["SET", "m", "plain"]), "+OK\r\n");
    assert_eq!(String::from_utf8(h.0.reply_bytes()).unwrap(), "$-1\r\n");
}

#[test]
fn a_node_restarted_from_its_dir_catches_up() {
    let mut g = Group::start("restart");
    let leader = g.leader();
    let lport = g.port(leader);
    for i in 0..20 {
        assert_eq!(must(lport, &["SET", &format!("k{i}"), "v"]), "+OK\r\n");
    }
    let follower = g.nodes.iter().find(|n| n.id != leader).map(|n| n.id).expect("follower");
    let fport = g.port(follower);
    let deadline = Instant::now() + DEADLINE;
    while !must(fport, &["INFO", "keyspace"]).contains("db0:keys=20") {
        assert!(Instant::now() < deadline, "the follower never applied the first writes");
        std::thread::sleep(Duration::from_millis(50));
    }
    g.node(follower).kill();
    // The two others are a majority: writes go on meanwhile.
    for i in 20..50 {
        assert_eq!(must(lport, &["SET", &format!("k{i}"), "v"]), "+OK\r\n");
    }
    assert_eq!(int(&must(lport, &["DBSIZE"])), 50);
    g.restart(follower);
    // It replays its own log from --dir, then receives what it missed.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let ks = must(fport, &["INFO", "keyspace"]);
        if ks.contains("db0:keys=50") {
            break;
        }
        assert!(Instant::now() < deadline, "the restarted node did not catch up: {ks:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let i = info(fport).expect("info");
    assert_eq!(i["consensus_role"], "follower");
    assert_eq!(i["consensus_leader"], leader.to_string());
}

/// Waits until `INFO keyspace` of the node on `port` shows `want` (e.g. `db0:keys=60`).
fn wait_keyspace(port: u16, want: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let ks = must(port, &["INFO", "keyspace"]);
        if ks.contains(want) {
            return;
        }
        assert!(Instant::now() < deadline, "node on port {port} never showed {want}: {ks:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_node_far_behind_installs_a_snapshot_and_the_whole_group_restarts_from_its_dirs() {
    // A snapshot every 10 entries, and entries older than 5 before it purged.
    let mut g = Group::start_with("snapshot", &["--raft-snapshot-every", "10"]);
    let leader = g.leader();
    let lport = g.port(leader);
    let follower = g.nodes.iter().find(|n| n.id != leader).map(|n| n.id).expect("follower");
    let fport = g.port(follower);
    let behind: i64 = info(fport).expect("info")["consensus_applied_index"].parse().unwrap();
    g.node(follower).kill();
    // A script and a function defined while the follower is away reach it in the snapshot.
    let sha = must(lport, &["SCRIPT", "LOAD", "return 'from the snapshot'"]);
    let sha = sha.lines().nth(1).expect("sha").to_string();
    let lib = "#!lua name=snaplib\nredis.register_function('snapf', function() return 'f' end)";
    assert_eq!(must(lport, &["FUNCTION", "LOAD", lib]), "$7\r\nsnaplib\r\n");
    let mut tokens = Vec::new();
    for i in 0..60 {
        assert_eq!(must(lport, &["SET", &format!("k{i}"), "v"]), "+OK\r\n");
        if i % 20 == 0 {
            tokens.push(int(&must(lport, &["LOCK", &format!("l{i}"), "owner", "600000"])));
        }
    }
    // The entries the follower lacks are purged on the leader: it can only catch up from a
    // snapshot (the RDB file), which it installs and keeps in its directory.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let purged: i64 = info(lport).expect("info")["consensus_purged_index"].parse().unwrap();
        if purged > behind + 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the leader kept the log from {behind} (purged up to {purged})");
        std::thread::sleep(Duration::from_millis(50));
    }
    g.restart(follower);
    wait_keyspace(fport, "db0:keys=63");
    // The snapshot is loaded, then written to the directory: wait for the file (bounded).
    let dir = g.node(follower).dir.0.clone();
    let deadline = Instant::now() + DEADLINE;
    while !dir.join("raft-snapshot").exists() {
        assert!(Instant::now() < deadline, "no snapshot in {}", dir.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(must(fport, &["SCRIPT", "EXISTS", &sha]), "*1\r\n:1\r\n");
    assert!(must(fport, &["FUNCTION", "LIST"]).contains("snapf"));

    // Every node killed, then started from its directory: the group comes back with its data,
    // and tokens go on increasing from the replicated counter.
    let ids: Vec<u64> = g.nodes.iter().map(|n| n.id).collect();
    for &id in &ids {
        g.node(id).kill();
    }
    for &id in &ids {
        g.restart(id);
    }
    let leader = g.leader();
    let lport = g.port(leader);
    assert_eq!(int(&must(lport, &["DBSIZE"])), 63);
    assert_eq!(must(lport, &["GET", "k59"]), "$1\r\nv\r\n");
    // The script cache came back from the snapshot files: EVALSHA works on whichever node leads.
    assert_eq!(must(lport, &["EVALSHA", &sha, "0"]), "$17\r\nfrom the snapshot\r\n");
    assert_eq!(must(lport, &["FCALL", "snapf", "0"]), "$1\r\nf\r\n");
    assert_eq!(must(lport, &["LOCK", "l0", "someone-else", "1000"]), "$-1\r\n");
    let next = int(&must(lport, &["LOCK", "fresh", "owner", "1000"]));
    assert!(tokens.iter().all(|&t| t < next), "{next} after the restart, {tokens:?} before");
    for &id in &ids {
        wait_keyspace(g.port(id), "db0:keys=64");
    }
}

#[test]
fn the_redis_crate_cluster_client_follows_the_leader_through_a_failover() {
    let mut g = Group::start("cluster-client");
    let old = g.leader();
    let urls: Vec<String> = g.nodes.iter().map(|n| format!("redis://127.0.0.1:{}/", n.port)).collect();
    let client = redis::cluster::ClusterClientBuilder::new(urls)
        .connection_timeout(Duration::from_secs(2))
        .response_timeout(Duration::from_secs(15))
        .build()
        .expect("cluster client");
    let mut con = client.get_connection().expect("cluster connection");
    // The client learnt the topology from CLUSTER SLOTS and sends keyed commands to the leader.
    let ok: String = redis::cmd("SET").arg("lock").arg("tok").arg("NX").arg("PX").arg(60000).query(&mut con).unwrap();
    assert_eq!(ok, "OK");
    let before: i64 = redis::cmd("LOCK").arg("l").arg("owner").arg(60000).query(&mut con).unwrap();
    // The crate's `Script` (EVALSHA, and on NOSCRIPT SCRIPT LOAD then EVALSHA): the release.
    let release = redis::Script::new(RELEASE);
    let ok: String = redis::cmd("SET").arg("lock2").arg("tok2").query(&mut con).unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(release.key("lock2").arg("other").invoke::<i64>(&mut con).unwrap(), 0);
    assert_eq!(release.key("lock2").arg("tok2").invoke::<i64>(&mut con).unwrap(), 1);

    g.node(old).kill();
    // The application sees errors while the group elects, and retries. The crate's synchronous
    // cluster connection keeps reconnecting to a node that refuses connections instead of asking
    // the others for the topology (redis 1.8, `RetryMethod::Reconnect`), so a retry takes a new
    // connection, which reads CLUSTER SLOTS from the nodes it was given.
    let deadline = Instant::now() + DEADLINE;
    let mut retries = 0;
    let held = loop {
        match redis::cmd("GET").arg("lock").query::<Option<String>>(&mut con) {
            Ok(v) => break v,
            Err(e) => {
                retries += 1;
                assert!(Instant::now() < deadline, "no answer after the failover: {e}");
                std::thread::sleep(Duration::from_millis(100));
                if let Ok(c) = client.get_connection() {
                    con = c;
                }
            }
        }
    };
    assert_eq!(held.as_deref(), Some("tok"), "after {retries} retries");
    // The new leader knows the script the old one loaded: the release runs by its sha.
    assert_eq!(
        redis::cmd("EVALSHA").arg(release.get_hash()).arg(1).arg("lock").arg("tok").query::<i64>(&mut con).unwrap(),
        1
    );
    assert_eq!(redis::cmd("EXISTS").arg("lock2").query::<i64>(&mut con).unwrap(), 0);
    let after: i64 = redis::cmd("LOCK").arg("m").arg("owner").arg(60000).query(&mut con).unwrap();
    assert!(after > before, "{after} after the failover, {before} before");
    assert_ne!(g.leader(), old);
}

/// The crate's asynchronous cluster client needs no new connection after a leader is killed: it
/// asks the nodes it knows for the topology again and sends on to the new leader. A lock loop
/// (`SET NX PX`, an `INCR`, the owner-checked release) runs on one connection through the kill,
/// the application only trying a failed cycle again; no acknowledged increment is lost.
#[test]
fn the_redis_crate_async_cluster_client_needs_no_new_connection_after_a_leader_kill() {
    let mut g = Group::start("cluster-async");
    let old = g.leader();
    let urls: Vec<String> = g.nodes.iter().map(|n| format!("redis://127.0.0.1:{}/", n.port)).collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let client = redis::cluster::ClusterClientBuilder::new(urls)
        .connection_timeout(Duration::from_secs(2))
        .response_timeout(Duration::from_secs(5))
        .retries(10)
        .build()
        .expect("cluster client");
    let mut con = rt.block_on(client.get_async_connection()).expect("cluster connection");
    let release = redis::Script::new(RELEASE);
    let (mut acked, mut failed, mut killed_at) = (0i64, 0i64, None);
    let deadline = Instant::now() + DEADLINE;
    let mut n = 0;
    while acked < 300 {
        assert!(Instant::now() < deadline, "{acked} cycles within {DEADLINE:?}, {failed} failed");
        if acked == 100 && killed_at.is_none() {
            g.node(old).kill();
            killed_at = Some(n);
        }
        n += 1;
        match rt.block_on(lock_cycle(&mut con, &release, n)) {
            Ok(Some(_)) => acked += 1,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            // The application's own retry: the same connection, the next cycle.
            Err(_) => {
                failed += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    let counter: i64 = rt.block_on(redis::cmd("GET").arg("counter").query_async(&mut con)).expect("counter");
    // An increment whose reply was lost in the kill may have applied (the client's own resend, or
    // a failed cycle's): at most one per failed cycle.
    assert!(
        counter >= acked && counter <= acked + failed + 1,
        "counter {counter}, {acked} acknowledged, {failed} failed"
    );
    assert!(killed_at.is_some());
    assert_ne!(g.leader(), old);
    eprintln!("async cluster client: {acked} cycles, {failed} failed cycles tried again, counter {counter}");
}

/// One cycle of a lock loop on a cluster connection: the value its increment was acknowledged
/// with, None if another holds the lock, or the error that stopped it.
async fn lock_cycle(
    con: &mut redis::cluster_async::ClusterConnection,
    release: &redis::Script,
    n: u32,
) -> redis::RedisResult<Option<i64>> {
    let token = format!("tok-{n}");
    let got: Option<String> =
        redis::cmd("SET").arg("lk").arg(&token).arg("NX").arg("PX").arg(10_000).query_async(con).await?;
    // A `SET` that the client sent again after a lost reply may find its own lock.
    let mine = got.is_some()
        || redis::cmd("GET").arg("lk").query_async::<Option<String>>(con).await?.as_deref() == Some(token.as_str());
    if !mine {
        return Ok(None);
    }
    let v: i64 = redis::cmd("INCR").arg("counter").query_async(con).await?;
    let _: i64 = release.key("lk").arg(&token).invoke_async(con).await?;
    Ok(Some(v))
}

#[test]
fn inconsistent_consensus_options_stop_the_server_and_replies_respect_client_reply() {
    let dir = TempDir::new("consensus-options");
    for (args, why) in [
        (vec!["--raft-id", "4", "--raft-peers", "1=127.0.0.1:1,2=127.0.0.1:2"], "does not list this node's raft-id 4"),
        (vec!["--raft-id", "1", "--raft-port", "9", "--raft-peers", "1=127.0.0.1:1"], "raft-port 9"),
        (vec!["--raft-id", "1", "--raft-peers", "1=127.0.0.1"], "invalid raft-peers entry"),
        (vec!["--raft-peers", "1=127.0.0.1:1"], "need raft-id"),
        (
            vec!["--raft-id", "1", "--raft-peers", "1=127.0.0.1:1", "--raft-election-timeout", "400"],
            "raft-election-timeout 400 should be at least 5 times raft-heartbeat-interval 100",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_latch-server"))
            .args(["--bind", "127.0.0.1", "--port", &free_port().to_string(), "--dir", dir.path()])
            .args(&args)
            .current_dir(&dir.0)
            .output()
            .expect("run latch-server");
        assert!(!out.status.success(), "{args:?} started");
        let log = String::from_utf8_lossy(&out.stdout);
        assert!(log.contains(why), "{args:?}: {log}");
    }

    // A single-member group leads itself; CLIENT REPLY OFF silences replicated writes too.
    drop(dir);
    let g = Group::build("options-single", 1, &[], |_, _, port| port, |_| Vec::new());
    let port = g.port(g.leader());
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.write_all(b"CLIENT REPLY OFF\r\nSET a 1\r\nCLIENT REPLY SKIP\r\nSET b 2\r\nCLIENT REPLY ON\r\nGET b\r\n")
        .unwrap();
    let mut got = Vec::new();
    while !got.ends_with(b"$1\r\n2\r\n") {
        let mut chunk = [0u8; 1024];
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&chunk[..n]);
    }
    assert_eq!(String::from_utf8_lossy(&got), "+OK\r\n$1\r\n2\r\n");
}

/// `raft-election-timeout` is the followers' wait for a heartbeat: with 4 s, the group elects no
/// new leader within 3 s of the leader's `kill -9` (with the default 600 ms it has one in about
/// one second), and then one, holding the data.
#[test]
fn followers_wait_their_election_timeout_before_electing_a_new_leader() {
    let mut g =
        Group::start_with("election-timeout", &["--raft-heartbeat-interval", "50", "--raft-election-timeout", "4000"]);
    let old = g.leader();
    let port = g.port(old);
    assert_eq!(must(port, &["SET", "k", "v"]), "+OK\r\n");
    let got = call(port, &["CONFIG", "GET", "raft-election-timeout"]).expect("reply");
    assert!(got.ends_with("$4\r\n4000\r\n"), "{got:?}");
    g.node(old).kill();
    let killed = Instant::now();
    assert_eq!(g.leader_within(Duration::from_secs(3)), None, "a leader within 3 s of the kill");
    let new = g.leader();
    // The last heartbeat came up to one interval before the kill.
    assert!(killed.elapsed() >= Duration::from_millis(3950), "elected after {:?}", killed.elapsed());
    assert_ne!(new, old);
    assert_eq!(must(g.port(new), &["GET", "k"]), "$1\r\nv\r\n");
}

/// Concurrent writers share entries (one proposal in flight, the writes that came meanwhile in
/// the next): each still gets its own reply, in the order the log applied them, and every node
/// ends with the same counter and the same grants.
#[test]
fn concurrent_writes_share_entries_and_each_gets_its_own_reply() {
    let g = Group::start("batch");
    let port = g.port(g.leader());
    let (clients, each) = (16, 25);
    let workers: Vec<_> = (0..clients)
        .map(|c| {
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                for i in 0..each {
                    seen.push(int(&must(port, &["INCR", "counter"])));
                    let key = format!("lock:{c}:{i}");
                    seen.push(-int(&must(port, &["LOCK", &key, "owner", "60000"])));
                }
                seen
            })
        })
        .collect();
    let mut counts = Vec::new();
    let mut tokens = Vec::new();
    for w in workers {
        for v in w.join().expect("a writer") {
            if v > 0 { counts.push(v) } else { tokens.push(-v) }
        }
    }
    counts.sort_unstable();
    tokens.sort_unstable();
    let total = (clients * each) as i64;
    // Every INCR got a distinct value: 1..=total; every grant a distinct token.
    assert_eq!(counts, (1..=total).collect::<Vec<_>>());
    tokens.dedup();
    assert_eq!(tokens.len(), total as usize);
    // The entries carried more than one write each (fewer entries than writes).
    let applied = applied_index(port).expect("applied index");
    assert!(applied < total as u64, "{applied} entries for {} writes", 2 * total);
    for n in &g.nodes {
        wait_keyspace(n.port, &format!("keys={}", total + 1));
    }
}

/// The `lock` crate given the group's members: a request sent to a follower follows `MOVED` to
/// the leader; after `kill -9` of the leader it goes on with the next members until the new leader
/// answers; the lock taken before is still held, and the next token is above it.
#[test]
fn the_lock_crate_follows_the_leader_through_moved_and_a_failover() {
    let mut g = Group::start("lockcrate");
    let leader = g.leader();
    let mut ids: Vec<u64> = g.nodes.iter().map(|n| n.id).filter(|&id| id != leader).collect();
    ids.push(leader);
    let urls: Vec<String> = ids.iter().map(|&id| format!("redis://127.0.0.1:{}/", g.port(id))).collect();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let client = lock::LockClient::connect_group(&urls).expect("client");
    let ttl = Duration::from_secs(60);
    // The first member is a follower: MOVED to the leader.
    let first = rt.block_on(client.native_lock("job", "me", ttl)).expect("LOCK").expect("granted");
    assert_eq!(rt.block_on(client.native_lock("job", "other", ttl)).expect("LOCK"), None);
    // Waiting in the group's queue: another client's LOCK ... WAIT (its first member a follower,
    // so the wait follows MOVED) is granted by the release, with a higher token.
    let held = rt.block_on(client.native_lock("queue", "me", ttl)).expect("LOCK").expect("granted");
    let owned: Vec<String> = urls.iter().map(|u| u.to_string()).collect();
    let waiter = std::thread::spawn(move || {
        let urls: Vec<&str> = owned.iter().map(String::as_str).collect();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let c = lock::LockClient::connect_group(&urls).expect("client");
        rt.block_on(c.native_lock_wait("queue", "waiter", Duration::from_secs(60), Duration::from_secs(30)))
    });
    wait_waiters(g.port(leader), "queue", 1);
    assert!(rt.block_on(client.native_unlock("queue", "me")).expect("UNLOCK"));
    let granted = waiter.join().expect("waiter").expect("LOCK ... WAIT").expect("granted");
    assert!(granted > held, "token {granted} after {held}");
    g.node(leader).kill();
    // The connection in use is gone; the others are tried until the new leader takes it.
    let second = rt.block_on(client.native_lock("job2", "me", ttl)).expect("LOCK after the failover").expect("granted");
    assert!(second > first, "token {second} after {first}");
    assert!(rt.block_on(client.native_extend("job", "me", ttl)).expect("LOCKEXTEND"), "the first lock is still held");
    assert_eq!(rt.block_on(client.native_lock("job", "other", ttl)).expect("LOCK"), None);
}

/// A waiter whose connection ends on a node that no longer leads leaves the queue: that node
/// forwards the leave to the leader. Without it the waiter (WAIT 0) would be granted the lock at
/// the release and hold it for its whole TTL, ahead of the waiter queued after it.
#[test]
fn a_waiter_lost_on_a_former_leader_leaves_the_queue() {
    let mut g = Group::start("leave");
    let old = g.leader();
    let oport = g.port(old);
    assert!(int(&must(oport, &["LOCK", "l", "a", "60000"])) > 0);
    let lost = send(oport, &["LOCK", "l", "lost", "60000", "WAIT", "0"]);
    wait_waiters(oport, "l", 1);
    // The leader is paused until another node leads, then resumes as a follower, the waiting
    // connection still open on it.
    g.node(old).signal("STOP");
    let others: Vec<u64> = g.nodes.iter().map(|n| n.id).filter(|&id| id != old).collect();
    let nport = g.port(loop_until(&format!("new leader while node {old} is paused"), || leading(&g, &others)));
    g.node(old).signal("CONT");
    loop_until(&format!("follower role for node {old}"), || (role(oport).as_deref() == Some("follower")).then_some(()));
    let mut next = send(nport, &["LOCK", "l", "next", "60000", "WAIT", "30000"]);
    wait_waiters(nport, "l", 2);
    drop(lost);
    wait_waiters(nport, "l", 1);
    assert_eq!(must(nport, &["UNLOCK", "l", "a"]), ":1\r\n");
    assert!(int(&String::from_utf8(next.0.reply_bytes()).unwrap()) > 0, "the waiter after the lost one is granted");
    assert!(must(nport, &["LOCKINFO", "l"]).contains("$4\r\nnext\r\n"));
}

/// A waiter whose connection ends while the leader its node knows cannot take the leave (paused
/// here) leaves the queue all the same: the node tries the leave again until a leader commits it,
/// here the one the two others elect meanwhile. Before, the one forward was lost, and the waiter
/// (WAIT 0) stayed queued for good.
#[test]
fn a_waiter_s_leave_is_tried_again_until_a_leader_commits_it() {
    let mut g = Group::start("leave-again");
    let first = g.leader();
    let fport = g.port(first);
    assert!(int(&must(fport, &["LOCK", "l", "a", "60000"])) > 0);
    let lost = send(fport, &["LOCK", "l", "lost", "60000", "WAIT", "0"]);
    wait_waiters(fport, "l", 1);
    // The first leader is paused until another node leads, then resumes as a follower of it.
    g.node(first).signal("STOP");
    let others: Vec<u64> = g.nodes.iter().map(|n| n.id).filter(|&id| id != first).collect();
    let second = loop_until("new leader", || leading(&g, &others));
    g.node(first).signal("CONT");
    loop_until("first leader following the second", || {
        let i = info(fport)?;
        (i.get("consensus_role").map(String::as_str) == Some("follower")
            && i.get("consensus_leader") == Some(&second.to_string()))
        .then_some(())
    });
    // The leader the first node knows is paused when the waiter's connection ends: the forward
    // cannot commit there, and the first node and the third elect another leader.
    g.node(second).signal("STOP");
    drop(lost);
    let third = others.iter().copied().find(|&id| id != second).expect("a third node");
    let leader_port = g.port(loop_until("leader of the two running nodes", || leading(&g, &[first, third])));
    wait_waiters(leader_port, "l", 0);
    g.node(second).signal("CONT");
    assert_eq!(must(leader_port, &["UNLOCK", "l", "a"]), ":1\r\n");
    assert!(!must(leader_port, &["LOCKINFO", "l"]).contains("lost"), "the lost waiter was granted the lock");
}

/// Polls `f` every 50 ms until it gives a value, for up to [`DEADLINE`] (then fails: "no {what}").
fn loop_until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "no {what} within {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The node's `consensus_applied_index` (None if it does not answer).
fn applied_index(port: u16) -> Option<u64> {
    info(port).and_then(|i| i.get("consensus_applied_index")?.parse().ok())
}

/// The node's `consensus_last_log_index` (None if it does not answer).
fn last_log_index(port: u16) -> Option<u64> {
    info(port).and_then(|i| i.get("consensus_last_log_index")?.parse().ok())
}

/// The node's `consensus_role` (None if it does not answer).
fn role(port: u16) -> Option<String> {
    info(port).and_then(|i| i.get("consensus_role").cloned())
}

/// The node of `ids` that says it leads, if one does.
fn leading(g: &Group, ids: &[u64]) -> Option<u64> {
    ids.iter().copied().find(|&id| role(g.port(id)).as_deref() == Some("leader"))
}

/// A leader paused (SIGSTOP) longer than a lock's lease: the others elect a leader, the lease runs
/// out on raft time there and another client gets the lock with a higher token. When the old
/// leader resumes, the first holder's writes, fenced with its old token, pass nowhere: not through
/// the resumed old leader (it cannot commit any more), not through the new one (the token is
/// stale). The data is the second holder's.
#[test]
fn a_paused_leader_s_lock_holder_is_fenced_off_after_its_lease() {
    let mut g = Group::start("pause");
    let old = g.leader();
    let oport = g.port(old);
    let t1 = int(&must(oport, &["LOCK", "job", "A", "1000"]));
    assert_eq!(must(oport, &["FENCED", "job", &t1.to_string(), "SET", "data", "A1"]), "+OK\r\n");
    let pid = g.node(old).child.as_ref().expect("running").id().to_string();
    let signal = |sig: &str| {
        let ok = Command::new("kill").args([sig, &pid]).status().is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} {pid}");
    };
    signal("-STOP");
    // A new leader among the two others.
    let others: Vec<u64> = g.nodes.iter().map(|n| n.id).filter(|&id| id != old).collect();
    let nport = g.port(loop_until(&format!("new leader while node {old} is paused"), || leading(&g, &others)));
    // B gets the lock once A's lease ran out (on raft time, which stood still while no leader).
    let deadline = Instant::now() + DEADLINE;
    let t2 = loop {
        let r = must(nport, &["LOCK", "job", "B", "1000"]);
        if r.starts_with(':') {
            break int(&r);
        }
        assert!(Instant::now() < deadline, "B never got the lock: {r:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(t2 > t1, "token {t2} after {t1}");
    assert_eq!(must(nport, &["FENCED", "job", &t2.to_string(), "SET", "data", "B"]), "+OK\r\n");
    signal("-CONT");
    // A still believes in t1.
    let through_old = call(oport, &["FENCED", "job", &t1.to_string(), "SET", "data", "A2"]);
    assert_ne!(through_old.as_deref(), Some("+OK\r\n"), "the resumed old leader took a fenced-off write");
    let through_new = must(nport, &["FENCED", "job", &t1.to_string(), "SET", "data", "A2"]);
    assert!(through_new.starts_with("-FENCED"), "{through_new:?}");
    assert_eq!(must(nport, &["GET", "data"]), "$1\r\nB\r\n");
}

/// The owner-checked lock release (EVALSHA of compare-and-delete), scripts and functions, MULTI/EXEC
/// with WATCH and SPOP go through the log: every node applies them alike, so after `kill -9` of
/// the leader the new one holds what the old one answered, and knows the scripts loaded before.
#[test]
fn scripts_transactions_and_spop_survive_kill_9_of_the_leader() {
    let mut g = Group::start("scripts");
    let old = g.leader();
    let oport = g.port(old);
    let follower = g.nodes.iter().find(|n| n.id != old).map(|n| n.port).expect("follower");

    // SCRIPT LOAD through the log: every node learns the script (SCRIPT EXISTS is a node's own).
    let loaded = must(oport, &["SCRIPT", "LOAD", RELEASE]);
    let sha = loaded.lines().nth(1).unwrap_or_else(|| panic!("SCRIPT LOAD: {loaded:?}")).to_string();
    assert_eq!(sha.len(), 40);
    let deadline = Instant::now() + DEADLINE;
    while must(follower, &["SCRIPT", "EXISTS", &sha]) != "*1\r\n:1\r\n" {
        assert!(Instant::now() < deadline, "the follower never learned the script");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Owner-checked release: a wrong token leaves the lock, the right one deletes it.
    assert_eq!(must(oport, &["SET", "lock", "tok", "NX", "PX", "60000"]), "+OK\r\n");
    assert_eq!(must(oport, &["EVALSHA", &sha, "1", "lock", "other"]), ":0\r\n");
    assert_eq!(must(oport, &["EVALSHA", &sha, "1", "lock", "tok"]), ":1\r\n");
    assert_eq!(must(oport, &["GET", "lock"]), "$-1\r\n");
    assert_eq!(must(oport, &["SET", "lock2", "tok2", "NX", "PX", "60000"]), "+OK\r\n");
    assert_eq!(
        must(oport, &["EVALSHA", "0000000000000000000000000000000000000000", "0"]).lines().next(),
        Some("-NOSCRIPT No matching script. Please use EVAL.")
    );
    // Followers send scripts to the leader, but load one into their own cache themselves (cluster
    // clients send SCRIPT LOAD to every node).
    assert!(must(follower, &["EVALSHA", &sha, "1", "lock2", "tok2"]).starts_with("-MOVED "));
    let local = must(follower, &["SCRIPT", "LOAD", "return 'follower'"]);
    assert!(local.starts_with("$40\r\n"), "{local}");
    let local = local.lines().nth(1).expect("sha").to_string();
    assert_eq!(must(follower, &["SCRIPT", "EXISTS", &local]), "*1\r\n:1\r\n");
    assert_eq!(must(oport, &["SCRIPT", "EXISTS", &local]), "*1\r\n:0\r\n");
    // A function library, loaded through the log.
    let lib =
        "#!lua name=lib\nredis.register_function('bump', function(keys) return redis.call('incrby', keys[1], 10) end)";
    assert_eq!(must(oport, &["FUNCTION", "LOAD", lib]), "$3\r\nlib\r\n");
    assert_eq!(must(oport, &["FCALL", "bump", "1", "f"]), ":10\r\n");

    // Random choices inside scripts and SPOP come out alike on every node.
    let members: Vec<String> = (0..50).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD", "s"];
    sadd.extend(members.iter().map(String::as_str));
    assert_eq!(must(oport, &sadd), ":50\r\n");
    let mut popped = Vec::new();
    for _ in 0..5 {
        popped.push(must(oport, &["SPOP", "s"]));
    }
    popped.push(must(oport, &["SPOP", "s", "4"]));
    let picked = must(
        oport,
        &[
            "EVAL",
            "local m = redis.call('srandmember', KEYS[1]) redis.call('set', KEYS[2], m) \
             redis.call('set', KEYS[3], math.random(1000000000)) return m",
            "3",
            "s",
            "pick",
            "rnd",
        ],
    );
    let rnd = must(oport, &["GET", "rnd"]);
    // Scripts may not call a command whose reply depends on the node.
    assert!(
        must(oport, &["EVAL", "return redis.call('randomkey')", "0"])
            .contains("not allowed from script in consensus mode")
    );
    let smembers_sorted = |port: u16| {
        let r = must(port, &["SORT", "s", "ALPHA"]);
        r.lines().filter(|l| l.starts_with('m')).map(str::to_string).collect::<Vec<_>>()
    };
    let set_before = smembers_sorted(oport);
    assert_eq!(set_before.len(), 50 - 5 - 4);

    // MULTI/EXEC: one entry, EXEC's array from the leader's apply.
    let mut c = Session::open(oport);
    assert_eq!(c.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.cmd(&["INCR", "x"]), "+QUEUED\r\n");
    assert_eq!(c.cmd(&["INCR", "x"]), "+QUEUED\r\n");
    assert_eq!(c.cmd(&["EVALSHA", &sha, "1", "lock2", "nope"]), "+QUEUED\r\n");
    // A blocking command inside MULTI answers at once, as if timed out.
    assert_eq!(c.cmd(&["BLPOP", "q", "0"]), "+QUEUED\r\n");
    assert_eq!(c.cmd(&["EXEC"]), "*4\r\n:1\r\n:2\r\n:0\r\n*-1\r\n");
    // A transaction that only reads takes no log entry: the follower's apply client runs no EXEC
    // for it (it ran one for the transaction above).
    let follower_execs = || -> String {
        let stats = must(follower, &["INFO", "commandstats"]);
        stats
            .lines()
            .find(|l| l.starts_with("cmdstat_exec:"))
            .map(|l| l.split(',').next().unwrap().to_string())
            .unwrap_or_default()
    };
    // The leader answers EXEC once it applied the entry, but its applied index (openraft's
    // metrics, sent at the top of its core's turns) may not show that entry yet: the follower once
    // caught up with the stale index, one entry short of the EXEC. The leader's last log index
    // was sent on a turn between the entry's append and its apply, so it covers the entry.
    let caught_up = || {
        let target = last_log_index(oport).expect("last log index");
        let deadline = Instant::now() + DEADLINE;
        while applied_index(follower).expect("applied index") < target {
            assert!(Instant::now() < deadline, "the follower did not catch up");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    caught_up();
    let execs = follower_execs();
    // (The follower's consensus section, should this fail, tells whether it took a snapshot
    // instead of the entry.)
    assert_eq!(execs, "cmdstat_exec:calls=1", "{:?}", must(follower, &["INFO", "consensus"]));
    assert_eq!(c.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.cmd(&["GET", "x"]), "+QUEUED\r\n");
    assert_eq!(c.cmd(&["SRANDMEMBER", "nokey"]), "+QUEUED\r\n");
    assert_eq!(c.cmd(&["EXEC"]), "*2\r\n$1\r\n2\r\n$-1\r\n");
    assert_eq!(must(oport, &["SET", "after-read-tx", "1"]), "+OK\r\n");
    caught_up();
    assert_eq!(follower_execs(), execs);
    // Errors at queue time as in Redis: EXECABORT.
    assert_eq!(c.cmd(&["MULTI"]), "+OK\r\n");
    assert!(c.cmd(&["INCR"]).starts_with("-ERR wrong number of arguments"));
    assert!(c.cmd(&["CLIENT", "SETNAME", "x"]).starts_with("-ERR CLIENT SETNAME inside MULTI is not supported"));
    assert!(c.cmd(&["EXEC"]).starts_with("-EXECABORT"));
    assert_eq!(c.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.cmd(&["INCR", "x"]), "+QUEUED\r\n");
    assert_eq!(c.cmd(&["DISCARD"]), "+OK\r\n");
    // WATCH: a watched key changed by another client aborts EXEC; an unchanged one does not.
    let mut other = Session::open(oport);
    assert_eq!(c.cmd(&["WATCH", "w"]), "+OK\r\n");
    assert_eq!(other.cmd(&["SET", "w", "1"]), "+OK\r\n");
    assert_eq!(c.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.cmd(&["INCR", "x"]), "+QUEUED\r\n");
    assert_eq!(c.cmd(&["EXEC"]), "*-1\r\n");
    assert_eq!(c.cmd(&["WATCH", "w"]), "+OK\r\n");
    assert_eq!(other.cmd(&["SET", "unrelated", "1"]), "+OK\r\n");
    assert_eq!(c.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.cmd(&["INCR", "x"]), "+QUEUED\r\n");
    assert_eq!(c.cmd(&["EXEC"]), "*1\r\n:3\r\n");
    // A watched key that expires (on raft time) before EXEC aborts it.
    assert_eq!(other.cmd(&["SET", "e", "1", "PX", "300"]), "+OK\r\n");
    assert_eq!(c.cmd(&["WATCH", "e"]), "+OK\r\n");
    let deadline = Instant::now() + DEADLINE;
    while other.cmd(&["EXISTS", "e"]) != ":0\r\n" {
        assert!(Instant::now() < deadline, "e never expired");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(c.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.cmd(&["INCR", "x"]), "+QUEUED\r\n");
    assert_eq!(c.cmd(&["EXEC"]), "*-1\r\n");
    // On a follower, a queued key is redirected (as by a Redis Cluster node) and EXEC aborts;
    // WATCH goes to the leader.
    let mut f = Session::open(follower);
    assert_eq!(f.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(f.cmd(&["INCR", "x"]), format!("-MOVED 16287 127.0.0.1:{oport}\r\n"));
    assert!(f.cmd(&["EXEC"]).starts_with("-EXECABORT"));
    assert!(f.cmd(&["WATCH", "x"]).starts_with("-MOVED "));

    g.node(old).kill();
    let new = g.leader();
    assert_ne!(new, old);
    let nport = g.port(new);
    // The released lock is gone, the other one is there; the script loaded before the failover
    // runs on the new leader by its sha.
    assert_eq!(must(nport, &["GET", "lock"]), "$-1\r\n");
    assert_eq!(must(nport, &["EVALSHA", &sha, "1", "lock2", "tok2"]), ":1\r\n");
    assert_eq!(must(nport, &["EXISTS", "lock2"]), ":0\r\n");
    assert_eq!(must(nport, &["FCALL", "bump", "1", "f"]), ":20\r\n");
    assert_eq!(must(nport, &["GET", "x"]), "$1\r\n3\r\n");
    // The new leader applied the same SPOPs and random picks as the old one.
    assert_eq!(smembers_sorted(nport), set_before);
    assert_eq!(must(nport, &["GET", "pick"]), picked);
    assert_eq!(must(nport, &["GET", "rnd"]), rnd);
    for p in &popped {
        for m in p.lines().filter(|l| l.starts_with('m')) {
            assert_eq!(must(nport, &["SISMEMBER", "s", m]), ":0\r\n", "{m} popped on the old leader");
        }
    }
    // Transactions go on on the new leader.
    let mut c = Session::open(nport);
    assert_eq!(c.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.cmd(&["INCR", "x"]), "+QUEUED\r\n");
    assert_eq!(c.cmd(&["SPOP", "s"]), "+QUEUED\r\n");
    assert!(c.cmd(&["EXEC"]).starts_with("*2\r\n:4\r\n$"));
}

#[test]
fn members_join_through_cluster_meet_and_leave_through_cluster_forget() {
    let mut g = Group::start("members");
    let leader = g.leader();
    let lport = g.port(leader);
    assert_eq!(must(lport, &["SET", "before", "1"]), "+OK\r\n");

    // Node 4 starts on its own, waiting to be added: it initializes no group.
    let (port, raft_port) = (free_port(), free_port());
    let mut n4 = common::group::Node {
        id: 4,
        port,
        raft_port,
        peers: format!("4=127.0.0.1:{raft_port}"),
        env: Vec::new(),
        dir: TempDir::new("consensus-members-4"),
        child: None,
    };
    n4.start(&["--raft-join", "yes"]);
    assert!(info(port).is_some_and(|i| i.get("consensus_role").map(String::as_str) != Some("leader")));
    let meet = ["CLUSTER", "MEET", "127.0.0.1", &port.to_string(), &raft_port.to_string()];
    // A follower sends the change to the leader; a node nobody listens for is refused.
    let follower = g.nodes.iter().find(|n| n.id != leader).expect("follower").port;
    assert_eq!(must(follower, &meet), format!("-MOVED 0 127.0.0.1:{lport}\r\n"));
    let nobody = free_port().to_string();
    assert!(
        must(lport, &["CLUSTER", "MEET", "127.0.0.1", "1", &nobody])
            .starts_with("-ERR consensus: no raft node answers")
    );
    assert_eq!(must(lport, &meet), "+OK\r\n");
    assert_eq!(must(lport, &meet), "+OK\r\n", "meeting a member again changes nothing");
    g.nodes.push(n4);
    wait_keyspace(port, "db0:keys=1");
    assert_eq!(must(lport, &["SET", "after", "2"]), "+OK\r\n");
    wait_keyspace(port, "db0:keys=2");
    assert!(must(lport, &["CLUSTER", "NODES"]).contains(&format!("{:040x} 127.0.0.1:{port}@{raft_port}", 4)));

    // Four voters; forget one follower, then kill it and another: the leader and the one left
    // are a majority of the three remaining voters, which they would not be of four.
    let followers: Vec<u64> = g.nodes.iter().map(|n| n.id).filter(|id| *id != leader).collect();
    let (gone, down) = (followers[0], followers[1]);
    assert_eq!(must(lport, &["CLUSTER", "FORGET", &format!("{gone:040x}")]), "+OK\r\n");
    assert!(must(lport, &["CLUSTER", "FORGET", &format!("{gone:040x}")]).starts_with("-ERR Unknown node"));
    assert!(!must(lport, &["CLUSTER", "NODES"]).contains(&format!("{gone:040x}")));
    g.node(gone).kill();
    g.node(down).kill();
    assert_eq!(must(lport, &["SET", "quorum", "3"]), "+OK\r\n");
    assert!(must(lport, &["INFO", "consensus"]).contains("consensus_role:leader"));
}

/// `blocked_clients` of `INFO clients` on the node at `port`.
fn blocked_clients(port: u16) -> i64 {
    let i = must(port, &["INFO", "clients"]);
    let line = i.lines().find_map(|l| l.strip_prefix("blocked_clients:")).unwrap_or_else(|| panic!("{i}"));
    line.trim().parse().unwrap_or_else(|_| panic!("{i}"))
}

/// Waits until `n` clients are blocked on the node at `port`.
fn wait_blocked(port: u16, n: i64) {
    loop_until(&format!("{n} blocked clients on port {port}"), || (blocked_clients(port) == n).then_some(()));
}

/// The reply a request sent earlier with [`send`] got, as text.
fn answer(s: &mut Session) -> String {
    String::from_utf8(s.0.reply_bytes()).expect("utf-8")
}

/// Waits until every node of `g` applied what the node at `port` had applied when called, and
/// holds the same data (`DEBUG DIGEST`, which reads each node's own data).
fn wait_same_data(g: &Group, port: u16) {
    // The digest alone cannot tell: a node two entries behind may hold what the node on `port`
    // holds again (a push and its pop), and the digest leaves consumer groups out, as Redis's does.
    let target = applied_index(port).expect("applied index");
    loop_until("the same data on every node", || {
        let want = must(port, &["DEBUG", "DIGEST"]);
        g.nodes
            .iter()
            .all(|n| applied_index(n.port).is_some_and(|a| a >= target) && must(n.port, &["DEBUG", "DIGEST"]) == want)
            .then_some(())
    });
}

/// Blocking list and sorted-set pops in a group: a client blocked on the leader is served by a
/// later push through the log (the element is gone on every node), gets Redis's nil at its
/// timeout, can be unblocked by CLIENT UNBLOCK, and waiters on one key are served in the order
/// they blocked. A follower sends a blocking pop to the leader.
#[test]
fn blocking_pops_wait_on_the_leader_and_are_served_through_the_log() {
    let g = Group::start("bpop");
    let leader = g.leader();
    let lport = g.port(leader);
    let follower = g.nodes.iter().find(|n| n.id != leader).expect("follower").port;
    assert_eq!(must(follower, &["BLPOP", "q", "0"]), format!("-MOVED {} 127.0.0.1:{lport}\r\n", raft::key_slot(b"q")));
    assert_eq!(
        must(follower, &["BZPOPMIN", "z", "0"]),
        format!("-MOVED {} 127.0.0.1:{lport}\r\n", raft::key_slot(b"z"))
    );

    // Something there: served at once, as LPOP would.
    assert_eq!(int(&must(lport, &["RPUSH", "q", "a"])), 1);
    assert_eq!(must(lport, &["BLPOP", "q", "0"]), "*2\r\n$1\r\nq\r\n$1\r\na\r\n");
    // Nothing there: the client waits until another client's push, which it takes.
    let mut b = send(lport, &["BLPOP", "q", "0"]);
    wait_blocked(lport, 1);
    assert_eq!(int(&must(lport, &["LPUSH", "q", "x"])), 1);
    assert_eq!(answer(&mut b), "*2\r\n$1\r\nq\r\n$1\r\nx\r\n");
    assert_eq!(blocked_clients(lport), 0);
    // The pop went through the log: the list is gone on every node.
    wait_same_data(&g, lport);
    for n in &g.nodes {
        let mut r = Session::open(n.port);
        assert_eq!(r.cmd(&["READONLY"]), "+OK\r\n");
        assert_eq!(r.cmd(&["EXISTS", "q"]), ":0\r\n", "node {}", n.id);
    }

    // The timeout answers Redis's nil (a null array for BLPOP in RESP2, a null for BLMOVE).
    let started = Instant::now();
    assert_eq!(must(lport, &["BLPOP", "q", "0.3"]), "*-1\r\n");
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert_eq!(must(lport, &["BLMOVE", "q", "d", "LEFT", "RIGHT", "0.1"]), "$-1\r\n");

    // BLMOVE and BRPOPLPUSH move what a later push brings.
    let mut m = send(lport, &["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"]);
    wait_blocked(lport, 1);
    assert_eq!(int(&must(lport, &["RPUSH", "src", "m1", "m2"])), 2);
    assert_eq!(answer(&mut m), "$2\r\nm1\r\n");
    let mut m = send(lport, &["BRPOPLPUSH", "src2", "dst", "0"]);
    wait_blocked(lport, 1);
    assert_eq!(int(&must(lport, &["RPUSH", "src2", "m3"])), 1);
    assert_eq!(answer(&mut m), "$2\r\nm3\r\n");
    // BRPOPLPUSH pushes on the left, BLMOVE ... RIGHT on the right.
    assert_eq!(must(lport, &["LRANGE", "dst", "0", "-1"]), "*2\r\n$2\r\nm3\r\n$2\r\nm1\r\n");
    assert_eq!(must(lport, &["LRANGE", "src", "0", "-1"]), "*1\r\n$2\r\nm2\r\n");

    // Sorted sets: BZPOPMIN takes the lowest score; BZMPOP several.
    let mut z = send(lport, &["BZPOPMIN", "z", "0"]);
    wait_blocked(lport, 1);
    assert_eq!(int(&must(lport, &["ZADD", "z", "2", "two", "1", "one"])), 2);
    assert_eq!(answer(&mut z), "*3\r\n$1\r\nz\r\n$3\r\none\r\n$1\r\n1\r\n");
    let mut z = send(lport, &["BZMPOP", "0", "1", "z2", "MAX", "COUNT", "5"]);
    wait_blocked(lport, 1);
    assert_eq!(int(&must(lport, &["ZADD", "z2", "1", "a", "3", "c"])), 2);
    assert_eq!(answer(&mut z), "*2\r\n$2\r\nz2\r\n*2\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n");
    // A push to a key of another type does not serve a sorted-set waiter: it waits on.
    let mut z = send(lport, &["BZPOPMAX", "mixed", "0"]);
    wait_blocked(lport, 1);
    assert_eq!(int(&must(lport, &["RPUSH", "mixed", "l"])), 1);
    assert_eq!(must(lport, &["DEL", "mixed"]), ":1\r\n");
    assert_eq!(blocked_clients(lport), 1);
    assert_eq!(int(&must(lport, &["ZADD", "mixed", "5", "m"])), 1);
    assert_eq!(answer(&mut z), "*3\r\n$5\r\nmixed\r\n$1\r\nm\r\n$1\r\n5\r\n");

    // Two waiters on one key are served in the order they blocked: one push of two elements
    // gives the first waiter the first element.
    let mut first = send(lport, &["BLPOP", "jobs", "0"]);
    wait_blocked(lport, 1);
    let mut second = send(lport, &["BLPOP", "other", "jobs", "0"]);
    wait_blocked(lport, 2);
    assert_eq!(int(&must(lport, &["RPUSH", "jobs", "j1", "j2"])), 2);
    assert_eq!(answer(&mut first), "*2\r\n$4\r\njobs\r\n$2\r\nj1\r\n");
    assert_eq!(answer(&mut second), "*2\r\n$4\r\njobs\r\n$2\r\nj2\r\n");
    // One element for three waiters: the first gets it, the others wait on; the next push goes
    // to the second.
    let mut w: Vec<Session> = Vec::new();
    for i in 0..3 {
        w.push(send(lport, &["BRPOP", "jobs", "0"]));
        wait_blocked(lport, i + 1);
    }
    assert_eq!(int(&must(lport, &["RPUSH", "jobs", "k1"])), 1);
    assert_eq!(answer(&mut w[0]), "*2\r\n$4\r\njobs\r\n$2\r\nk1\r\n");
    wait_blocked(lport, 2);
    assert_eq!(int(&must(lport, &["RPUSH", "jobs", "k2"])), 1);
    assert_eq!(answer(&mut w[1]), "*2\r\n$4\r\njobs\r\n$2\r\nk2\r\n");

    // CLIENT UNBLOCK: TIMEOUT answers the timeout reply, ERROR Redis's UNBLOCKED error.
    let id = |s: &mut Session| int(&s.cmd(&["CLIENT", "ID"]));
    let mut u = Session::open(lport);
    let uid = id(&mut u);
    u.0.send(&common::encode(&["BLPOP", "none", "0"]));
    wait_blocked(lport, 2);
    assert_eq!(must(lport, &["CLIENT", "UNBLOCK", &uid.to_string(), "TIMEOUT"]), ":1\r\n");
    assert_eq!(answer(&mut u), "*-1\r\n");
    u.0.send(&common::encode(&["BLPOP", "none", "0"]));
    wait_blocked(lport, 2);
    assert_eq!(must(lport, &["CLIENT", "UNBLOCK", &uid.to_string(), "ERROR"]), ":1\r\n");
    assert_eq!(answer(&mut u), "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n");
    // The third waiter is still there, and a client that went away left the queue: the next
    // element goes to the waiter behind it.
    let mut behind = send(lport, &["BRPOP", "jobs", "0"]);
    wait_blocked(lport, 2);
    drop(w.remove(2));
    wait_blocked(lport, 1);
    assert_eq!(int(&must(lport, &["RPUSH", "jobs", "k3"])), 1);
    assert_eq!(answer(&mut behind), "*2\r\n$4\r\njobs\r\n$2\r\nk3\r\n");

    // Inside MULTI a blocking pop answers at once, as in Redis.
    let mut t = Session::open(lport);
    assert_eq!(t.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(t.cmd(&["BLPOP", "none", "0"]), "+QUEUED\r\n");
    assert_eq!(t.cmd(&["EXEC"]), "*1\r\n*-1\r\n");
    wait_same_data(&g, lport);
}

/// Streams in a group: XREAD BLOCK with `$` waits on the leader for entries added after it
/// blocked (a read: nothing is proposed for it), XREADGROUP BLOCK with `>` is served through the
/// log (the group's last delivered ID moves on every node), and a group reader whose stream is
/// deleted gets Redis's error.
#[test]
fn stream_reads_block_on_the_leader() {
    let g = Group::start("xread");
    let leader = g.leader();
    let lport = g.port(leader);
    assert!(must(lport, &["XADD", "s", "1-1", "f", "old"]).contains("1-1"));
    let mut r = send(lport, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    wait_blocked(lport, 1);
    // An entry after `$` (1-1 when it blocked) serves it; 1-1 is not read again.
    assert!(must(lport, &["XADD", "s", "2-1", "f", "new"]).contains("2-1"));
    assert_eq!(answer(&mut r), "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nf\r\n$3\r\nnew\r\n");
    assert_eq!(must(lport, &["XREAD", "BLOCK", "100", "STREAMS", "s", "$"]), "*-1\r\n");

    assert_eq!(must(lport, &["XGROUP", "CREATE", "s", "g", "$"]), "+OK\r\n");
    let mut c1 = send(lport, &["XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "s", ">"]);
    wait_blocked(lport, 1);
    let mut c2 = send(lport, &["XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "s", ">"]);
    wait_blocked(lport, 2);
    assert!(must(lport, &["XADD", "s", "3-1", "f", "job"]).contains("3-1"));
    // The first consumer that blocked gets the entry; the second waits on.
    assert_eq!(answer(&mut c1), "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n3-1\r\n*2\r\n$1\r\nf\r\n$3\r\njob\r\n");
    wait_blocked(lport, 1);
    assert!(must(lport, &["XADD", "s", "4-1", "f", "job2"]).contains("4-1"));
    assert_eq!(answer(&mut c2), "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n4-1\r\n*2\r\n$1\r\nf\r\n$4\r\njob2\r\n");
    // Every node holds the group's state: last delivered 4-1, two pending entries.
    wait_same_data(&g, lport);
    for n in &g.nodes {
        let mut s = Session::open(n.port);
        assert_eq!(s.cmd(&["READONLY"]), "+OK\r\n");
        let pending = s.cmd(&["XPENDING", "s", "g"]);
        assert!(pending.starts_with("*4\r\n:2\r\n$3\r\n3-1\r\n$3\r\n4-1\r\n"), "node {}: {pending:?}", n.id);
    }
    // The stream deleted under a blocked group reader: Redis 7.0's error.
    let mut c3 = send(lport, &["XREADGROUP", "GROUP", "g", "c3", "BLOCK", "0", "STREAMS", "s", ">"]);
    wait_blocked(lport, 1);
    assert_eq!(must(lport, &["DEL", "s"]), ":1\r\n");
    assert_eq!(answer(&mut c3), "-UNBLOCKED the stream key no longer exists\r\n");
    // With a timeout: the null array.
    assert_eq!(must(lport, &["XGROUP", "CREATE", "s2", "g", "$", "MKSTREAM"]), "+OK\r\n");
    assert_eq!(must(lport, &["XREADGROUP", "GROUP", "g", "c", "BLOCK", "100", "STREAMS", "s2", ">"]), "*-1\r\n");
}

/// A client blocked on a leader that loses its leadership (paused past the election timeout,
/// then resumed as a follower) is sent to the new leader with `-MOVED`, as Redis Cluster
/// redirects a blocked client whose slot moved; nothing was popped for it, and it can block
/// again there. A stream reader is redirected alike, unless it sent READONLY: then it reads on
/// the follower, served by what it applies.
#[test]
fn a_client_blocked_on_a_deposed_leader_is_sent_to_the_new_one() {
    let g = Group::start("bpop-moved");
    let old = g.leader();
    let oport = g.port(old);
    let mut b = send(oport, &["BLPOP", "q", "0"]);
    wait_blocked(oport, 1);
    // Stream readers too; one that asked for READONLY stays, served by what the node applies.
    assert!(must(oport, &["XADD", "s", "1-1", "f", "v"]).contains("1-1"));
    let mut x = send(oport, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    wait_blocked(oport, 2);
    let mut ro = Session::open(oport);
    assert_eq!(ro.cmd(&["READONLY"]), "+OK\r\n");
    ro.0.send(&common::encode(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]));
    wait_blocked(oport, 3);
    g.nodes.iter().find(|n| n.id == old).expect("leader").signal("STOP");
    let others: Vec<u64> = g.nodes.iter().map(|n| n.id).filter(|&id| id != old).collect();
    // A write commits on the new leader (on a busy machine another election may come first).
    let nport = loop_until("a new leader that commits a write", || {
        let nport = g.port(leading(&g, &others)?);
        (must(nport, &["SET", "kept", "v"]) == "+OK\r\n").then_some(nport)
    });
    g.nodes.iter().find(|n| n.id == old).expect("leader").signal("CONT");
    assert_eq!(answer(&mut b), format!("-MOVED {} 127.0.0.1:{nport}\r\n", raft::key_slot(b"q")));
    assert_eq!(answer(&mut x), format!("-MOVED {} 127.0.0.1:{nport}\r\n", raft::key_slot(b"s")));
    assert!(must(nport, &["XADD", "s", "2-1", "f", "w"]).contains("2-1"));
    assert_eq!(answer(&mut ro), "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nf\r\n$1\r\nw\r\n");
    // Blocked again on the new leader (where the redirection sends it), it is served there.
    let mut b = send(nport, &["BLPOP", "q", "0"]);
    wait_blocked(nport, 1);
    assert_eq!(int(&must(nport, &["RPUSH", "q", "x"])), 1);
    assert_eq!(answer(&mut b), "*2\r\n$1\r\nq\r\n$1\r\nx\r\n");
    wait_same_data(&g, nport);
}
