//! ACL through the real binary: a restricted user cannot reach keys, channels or commands outside
//! its rules by any route (direct, MULTI, EVAL's redis.call, FCALL, SORT BY/GET, MIGRATE, native
//! locks, FENCED, pub/sub), a deleted user's connections are closed, and ACL SAVE / LOAD go through
//! the ACL file.

mod common;

use common::Latch;

/// Bob may use keys `bob:*` and channel `news`, and most commands, but no dangerous ones.
const BOB: &[&str] = &[
    "ACL",
    "SETUSER",
    "bob",
    "on",
    ">pw",
    "~bob:*",
    "&news",
    "-@all",
    "+@read",
    "+@write",
    "+@pubsub",
    "+multi",
    "+exec",
    "+eval",
    "+fcall",
    "+sort",
    "+migrate",
    "+ping",
    "+lock",
    "+unlock",
    "+lockinfo",
    "+fenced",
];

fn bob(l: &Latch) -> redis::Connection {
    redis::Client::open(format!("redis://bob:pw@127.0.0.1:{}/", l.port))
        .expect("client")
        .get_connection()
        .expect("auth")
}

/// The error text of a reply that must be an error.
fn err<T: redis::FromRedisValue + std::fmt::Debug>(r: redis::RedisResult<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn q(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

fn setup() -> (Latch, redis::Connection) {
    let l = Latch::start(&[]);
    let mut admin = l.conn();
    let _: () = q(BOB).query(&mut admin).expect("setuser");
    let _: () = q(&["SET", "alice:1", "secret"]).query(&mut admin).unwrap();
    let _: () = q(&["SET", "bob:1", "mine"]).query(&mut admin).unwrap();
    let _: () = q(&["RPUSH", "bob:list", "1", "2"]).query(&mut admin).unwrap();
    (l, admin)
}

#[test]
fn direct_multi_and_scripts_are_checked() {
    let (l, mut admin) = setup();
    let mut b = bob(&l);
    let mine: String = q(&["GET", "bob:1"]).query(&mut b).unwrap();
    assert_eq!(mine, "mine");
    let e = err::<String>(q(&["GET", "alice:1"]).query(&mut b));
    assert!(e.contains("no permissions to access one of the keys"), "{e}");
    let e = err::<String>(q(&["INFO"]).query(&mut b));
    assert!(e.contains("no permissions to run the 'info' command"), "{e}");
    let e = err::<String>(q(&["CONFIG", "GET", "requirepass"]).query(&mut b));
    assert!(e.contains("'config|get'"), "{e}");

    // MULTI: refused at queue time, the transaction aborts.
    let r: Result<Vec<String>, _> = redis::pipe().atomic().cmd("GET").arg("alice:1").query(&mut b);
    let e = err(r);
    assert!(e.contains("EXECABORT") || e.contains("no permissions"), "{e}");
    let v: String = q(&["GET", "alice:1"]).query(&mut admin).unwrap();
    assert_eq!(v, "secret");

    // EVAL: redis.call and redis.pcall run as the caller.
    let e = err::<String>(q(&["EVAL", "return redis.call('get', 'alice:1')", "0"]).query(&mut b));
    assert!(e.contains("The user executing the script can't access at least one of the keys"), "{e}");
    let e = err::<String>(q(&["EVAL", "return redis.pcall('set', KEYS[1], 'x')", "1", "alice:1"]).query(&mut b));
    assert!(e.contains("no permissions") || e.contains("can't access"), "{e}");
    let e = err::<String>(q(&["EVAL", "return redis.call('info')", "0"]).query(&mut b));
    assert!(e.contains("can't run this command or subcommand"), "{e}");
    let allowed: bool = q(&["EVAL", "return redis.acl_check_cmd('get', 'alice:1')", "0"]).query(&mut b).unwrap();
    assert!(!allowed);

    // FCALL: a function loaded by the admin, called by bob, reaches nothing bob cannot.
    let lib = "#!lua name=lib\nredis.register_function('peek', function(keys) return redis.call('get', keys[1]) end)\n\
               redis.register_function('peek_alice', function() return redis.call('get', 'alice:1') end)";
    let _: String = q(&["FUNCTION", "LOAD", lib]).query(&mut admin).unwrap();
    // A declared key is refused before the function runs; an undeclared one by redis.call.
    let e = err::<String>(q(&["FCALL", "peek", "1", "alice:1"]).query(&mut b));
    assert!(e.contains("no permissions to access one of the keys"), "{e}");
    let e = err::<String>(q(&["FCALL", "peek_alice", "0"]).query(&mut b));
    assert!(e.contains("The user executing the script can't access at least one of the keys"), "{e}");
    let ok: String = q(&["FCALL", "peek", "1", "bob:1"]).query(&mut b).unwrap();
    assert_eq!(ok, "mine");

    // The log saw it, with the right contexts.
    let log: redis::Value = q(&["ACL", "LOG"]).query(&mut admin).unwrap();
    let text = format!("{log:?}");
    assert!(text.contains("lua") && text.contains("toplevel") && text.contains("multi"), "{text}");
}

#[test]
fn sort_migrate_locks_and_channels_are_checked() {
    let (l, _admin) = setup();
    let mut b = bob(&l);
    let e = err::<Vec<String>>(q(&["SORT", "bob:list", "BY", "alice:*"]).query(&mut b));
    assert!(e.contains("BY option of SORT denied due to insufficient ACL permissions."), "{e}");
    let e = err::<Vec<String>>(q(&["SORT", "bob:list", "GET", "alice:*"]).query(&mut b));
    assert!(e.contains("GET option of SORT denied due to insufficient ACL permissions."), "{e}");
    let e = err::<i64>(q(&["SORT", "bob:list", "STORE", "alice:2"]).query(&mut b));
    assert!(e.contains("no permissions to access one of the keys"), "{e}");
    let sorted: Vec<String> = q(&["SORT", "bob:list"]).query(&mut b).unwrap();
    assert_eq!(sorted, ["1", "2"]);

    // MIGRATE: its key and the KEYS form's keys.
    let port = l.port.to_string();
    let e = err::<String>(q(&["MIGRATE", "127.0.0.1", &port, "alice:1", "0", "100"]).query(&mut b));
    assert!(e.contains("no permissions to access one of the keys"), "{e}");
    let e =
        err::<String>(q(&["MIGRATE", "127.0.0.1", &port, "", "0", "100", "KEYS", "bob:1", "alice:1"]).query(&mut b));
    assert!(e.contains("no permissions to access one of the keys"), "{e}");

    // Native locks and FENCED.
    let e = err::<i64>(q(&["LOCK", "alice:lock", "me", "1000"]).query(&mut b));
    assert!(e.contains("no permissions to access one of the keys"), "{e}");
    let e = err::<redis::Value>(q(&["LOCKINFO", "alice:lock"]).query(&mut b));
    assert!(e.contains("no permissions to access one of the keys"), "{e}");
    let token: i64 = q(&["LOCK", "bob:lock", "me", "10000"]).query(&mut b).unwrap();
    let t = token.to_string();
    let e = err::<String>(q(&["FENCED", "bob:lock", &t, "SET", "alice:1", "x"]).query(&mut b));
    assert!(e.contains("no permissions to access one of the keys"), "{e}");
    let e = err::<String>(q(&["FENCED", "bob:lock", &t, "ECHO", "hi"]).query(&mut b));
    assert!(e.contains("no permissions to run the 'echo' command"), "{e}");
    let ok: String = q(&["FENCED", "bob:lock", &t, "SET", "bob:2", "x"]).query(&mut b).unwrap();
    assert_eq!(ok, "OK");

    // Channels.
    let e = err::<i64>(q(&["PUBLISH", "other", "m"]).query(&mut b));
    assert!(e.contains("no permissions to access one of the channels"), "{e}");
    let n: i64 = q(&["PUBLISH", "news", "m"]).query(&mut b).unwrap();
    assert_eq!(n, 0);
    let mut raw = l.raw();
    assert_eq!(raw.cmd(&[b"AUTH", b"bob", b"pw"]), "+OK\r\n");
    assert_eq!(
        raw.cmd(&[b"SUBSCRIBE", b"other"]),
        "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"
    );
    assert_eq!(
        raw.cmd(&[b"PSUBSCRIBE", b"n*"]),
        "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"
    );
}

#[test]
fn auth_whoami_client_list_and_deleted_users() {
    let (l, mut admin) = setup();
    let mut raw = l.raw();
    assert_eq!(
        raw.cmd(&[b"AUTH", b"bob", b"nope"]),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(raw.cmd(&[b"AUTH", b"bob", b"pw"]), "+OK\r\n");
    let whoami: String = q(&["ACL", "WHOAMI"]).query(&mut admin).unwrap();
    assert_eq!(whoami, "default");
    let list: String = q(&["CLIENT", "LIST"]).query(&mut admin).unwrap();
    assert!(list.contains(" user=bob "), "{list}");
    let n: i64 = q(&["ACL", "DELUSER", "bob"]).query(&mut admin).unwrap();
    assert_eq!(n, 1);
    assert!(raw.closed(), "a deleted user's connection is closed");
    // requirepass is the default user's password.
    let _: () = q(&["CONFIG", "SET", "requirepass", "s3cret"]).query(&mut admin).unwrap();
    let mut fresh = l.raw();
    assert_eq!(fresh.cmd(&[b"GET", b"x"]), "-NOAUTH Authentication required.\r\n");
    assert!(fresh.cmd(&[b"HELLO", b"3", b"AUTH", b"default", b"s3cret"]).starts_with('%'));
}

#[test]
fn acl_save_and_load_use_the_acl_file() {
    let dir = std::env::temp_dir().join(format!("latch-acl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("users.acl");
    std::fs::write(
        &file,
        "user alice on #2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae ~a:* +get\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let l = Latch::start(&["--aclfile", path]);
    let mut admin = l.conn();
    let users: Vec<String> = q(&["ACL", "USERS"]).query(&mut admin).unwrap();
    assert_eq!(users, ["alice", "default"]);
    let mut raw = l.raw();
    assert_eq!(raw.cmd(&[b"AUTH", b"alice", b"foo"]), "+OK\r\n");
    assert_eq!(raw.cmd(&[b"GET", b"a:1"]), "$-1\r\n");
    let _: () = q(BOB).query(&mut admin).unwrap();
    let _: () = q(&["ACL", "SAVE"]).query(&mut admin).unwrap();
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.starts_with("user alice on #2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae ~a:* resetchannels -@all +get\nuser bob on #"), "{saved}");
    // A broken file changes nothing.
    std::fs::write(&file, "user carol on +nosuch\nnot a user line\n").unwrap();
    let e = err::<()>(q(&["ACL", "LOAD"]).query(&mut admin));
    assert!(e.contains("Error in applying operation '+nosuch': Unknown command or category name in ACL"), "{e}");
    assert!(e.contains("should start with user keyword followed by the username"), "{e}");
    let users: Vec<String> = q(&["ACL", "USERS"]).query(&mut admin).unwrap();
    assert_eq!(users, ["alice", "bob", "default"]);
    // A good one replaces the users; alice's connection goes.
    std::fs::write(&file, "user dave on nopass ~* +@all\n").unwrap();
    let _: () = q(&["ACL", "LOAD"]).query(&mut admin).unwrap();
    let users: Vec<String> = q(&["ACL", "USERS"]).query(&mut admin).unwrap();
    assert_eq!(users, ["dave", "default"]);
    assert!(raw.closed());
    drop(l);
    let _ = std::fs::remove_dir_all(&dir);
}
