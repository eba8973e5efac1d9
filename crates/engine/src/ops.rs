//! Data-type operations, each written once, below the command handlers that reach them.
//!
//! An operation works on a [`Db`] and says what it did; it parses no argument, builds no reply and
//! reports nothing to the change stream. The plain command, its blocking variant (immediately and when
//! a writer serves a waiter), MULTI and scripts all reach the same function, as Redis's
//! `listPopRangeAndReplyWithKey` serves LPOP, BLPOP and LMPOP. The reporting half, also written once
//! per operation, lives beside its family's handlers (`cmd::list::pop`, `cmd::zset::pop`), since a
//! handler is what knows the client and its change record.

use crate::db::Db;
use crate::types::access::{create_list, remove_if_empty, write_list, write_zset};
use crate::value::SmallBytes;
use resp::Frame;

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The head (LEFT).
    Left,
    /// The tail (RIGHT).
    Right,
}

impl End {
    /// The pop command for this end (what pops propagate as).
    pub fn pop_command(self) -> &'static [u8] {
        match self {
            End::Left => b"LPOP",
            End::Right => b"RPOP",
        }
    }
    /// `LEFT` / `RIGHT`.
    pub fn name(self) -> &'static [u8] {
        match self {
            End::Left => b"LEFT",
            End::Right => b"RIGHT",
        }
    }
}

/// Elements popped from a list: one (LPOP, BLPOP) without a heap allocation.
pub type ListPopped = smallvec::SmallVec<[SmallBytes; 1]>;

/// Pops up to `count` elements from the `end` of the list at `key`, deleting the key once empty.
/// Ok(None) when the key is missing (or `count` is 0 on an existing list: Some(empty)); WRONGTYPE for
/// another type.
#[inline]
pub fn list_pop(db: &mut Db<'_, '_>, key: &[u8], end: End, count: usize) -> Result<Option<ListPopped>, Frame> {
    let Some(l) = write_list(db, key)? else { return Ok(None) };
    let n = count.min(l.len());
    let out: ListPopped = (0..n).filter_map(|_| if end == End::Left { l.pop_front() } else { l.pop_back() }).collect();
    remove_if_empty(db, key);
    Ok(Some(out))
}

/// Moves one element from the `from` end of `src` to the `to` end of `dst` (LMOVE). Both keys' types
/// are checked before anything moves. Ok(None) when `src` is missing.
#[inline]
pub fn list_move(db: &mut Db<'_, '_>, src: &[u8], dst: &[u8], from: End, to: End) -> Result<Option<SmallBytes>, Frame> {
    if write_list(db, src)?.is_none() {
        return Ok(None);
    }
    if src != dst {
        write_list(db, dst)?;
    }
    let Some(l) = write_list(db, src)? else { return Ok(None) };
    let Some(v) = (if from == End::Left { l.pop_front() } else { l.pop_back() }) else { return Ok(None) };
    let d = create_list(db, dst)?;
    if to == End::Left {
        d.push_front(v.clone());
    } else {
        d.push_back(v.clone());
    }
    remove_if_empty(db, src);
    Ok(Some(v))
}

/// Pops up to `count` members with the lowest (or, with `max`, highest) scores, in pop order,
/// deleting the key once empty. Ok(None) when the key is missing; WRONGTYPE for another type.
#[inline]
pub fn zset_pop(
    db: &mut Db<'_, '_>,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Vec<(SmallBytes, f64)>>, Frame> {
    let Some(z) = write_zset(db, key)? else { return Ok(None) };
    let len = z.len();
    let n = count.min(len);
    let mut items = if max { z.range(len - n, len) } else { z.range(0, n) };
    if max {
        items.reverse();
    }
    for (m, _) in &items {
        z.remove(m);
    }
    remove_if_empty(db, key);
    Ok(Some(items))
}
