//! The change count Redis reports as `rdb_changes_since_last_save`, command by command: every line
//! of `tests/data/write-commands.txt` (each write command Latch shares with Redis, in effective and
//! no-op forms) runs against Latch and against redis-server, and after each line the counter must
//! have grown by the same amount on both, with the same reply (SPOP's members are random).

mod common;

use common::{Latch, Raw, RedisServer};

fn changes(c: &mut Raw) -> i64 {
    let info = c.cmd(&[b"INFO", b"persistence"]);
    info.lines()
        .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no rdb_changes_since_last_save in {info:?}"))
}

#[test]
fn change_counts_match_redis_for_every_write_command() {
    let Some(redis) = RedisServer::start_or_skip("the change-count comparison") else { return };
    let latch = Latch::start(&["--save", ""]);
    let (mut l, mut r) = (latch.raw(), redis.raw());
    // The counter is read on a connection of its own: the other one may be inside MULTI.
    let (mut li, mut ri) = (latch.raw(), redis.raw());
    let mut lines = 0;
    let mut differ = Vec::new();
    for line in include_str!("data/write-commands.txt").lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        lines += 1;
        let args = resp::split_args(line.as_bytes()).expect("balanced quotes");
        let args: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let (l0, r0) = (changes(&mut li), changes(&mut ri));
        let (lr, rr) = (l.cmd(&args), r.cmd(&args));
        let (dl, dr) = (changes(&mut li) - l0, changes(&mut ri) - r0);
        if dl != dr || (lr != rr && !line.starts_with("SPOP")) {
            differ.push(format!("{line}: changes latch {dl} redis {dr}; reply latch {lr:?} redis {rr:?}"));
        }
    }
    assert!(lines > 180, "the script lost its lines ({lines})");
    assert!(differ.is_empty(), "{} of {lines} lines differ:\n{}", differ.len(), differ.join("\n"));
}
