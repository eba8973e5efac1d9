//! Where commands draw their random choices (SPOP, SRANDMEMBER, HRANDFIELD, ZRANDMEMBER, Lua's
//! `math.random`): the thread's generator, or a seeded one for a client whose commands must come out
//! the same wherever they run (consensus mode's apply client: every node runs the same command from
//! the same seed).
//!
//! A seed alone is not enough: a random position picks a different member on two nodes whose
//! set, hash or sorted set holds its members in another order (a node that loaded a snapshot has an
//! intset's members sorted and a sorted set's in score order, the leader in the order they came). So a seeded draw picks among positions in a
//! canonical order ([`canonical_order`]): the members sorted by their bytes.

use rand::rngs::{StdRng, ThreadRng};
use rand::{RngCore, SeedableRng};

/// A client's seeded generator: its seed, and the stream drawn from it so far.
#[derive(Clone, Debug)]
pub struct Seeded {
    seed: u64,
    rng: StdRng,
}

impl Seeded {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Seeded {
        Seeded { seed, rng: StdRng::seed_from_u64(seed) }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Starts the stream again from the seed (a script run that is thrown away and run again draws
    /// what its first try drew).
    pub fn restart(&mut self) {
        self.rng = StdRng::seed_from_u64(self.seed);
    }
}

/// The generator a command draws from.
pub enum Source<'a> {
    /// The thread's generator: choices differ from run to run.
    Thread(ThreadRng),
    /// A client's seeded stream: the same choices wherever the same command runs from the same seed.
    Seeded(&'a mut StdRng),
}

impl Source<'_> {
    /// The generator for a client with `seeded` (None: the thread's).
    pub fn of(seeded: Option<&mut Seeded>) -> Source<'_> {
        match seeded {
            Some(s) => Source::Seeded(&mut s.rng),
            None => Source::Thread(rand::rng()),
        }
    }

    /// Whether the choices must not depend on the node (see [`canonical_order`]).
    pub fn is_seeded(&self) -> bool {
        matches!(self, Source::Seeded(_))
    }
}

impl RngCore for Source<'_> {
    fn next_u32(&mut self) -> u32 {
        match self {
            Source::Thread(r) => r.next_u32(),
            Source::Seeded(r) => r.next_u32(),
        }
    }
    fn next_u64(&mut self) -> u64 {
        match self {
            Source::Thread(r) => r.next_u64(),
            Source::Seeded(r) => r.next_u64(),
        }
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        match self {
            Source::Thread(r) => r.fill_bytes(dst),
            Source::Seeded(r) => r.fill_bytes(dst),
        }
    }
}

/// For a seeded draw, the positions `0..len` in the order of the elements' bytes (`bytes(i)` is
/// element `i`'s), so that the n-th position names the same element on every node whatever order
/// the node holds them in; None for the thread's generator (positions are used as they are). Costs
/// a sort of the elements, O(N log N), which only consensus mode pays.
pub fn canonical_order<'b>(source: &Source<'_>, len: usize, bytes: impl Fn(usize) -> &'b [u8]) -> Option<Vec<usize>> {
    if !source.is_seeded() {
        return None;
    }
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_unstable_by(|&a, &b| bytes(a).cmp(bytes(b)));
    Some(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn seeded_sources_agree_and_restart() {
        let mut a = Seeded::new(42);
        let mut b = Seeded::new(42);
        let xs: Vec<u64> = (0..8).map(|_| Source::of(Some(&mut a)).random_range(0..1000)).collect();
        let ys: Vec<u64> = (0..8).map(|_| Source::of(Some(&mut b)).random_range(0..1000)).collect();
        assert_eq!(xs, ys);
        a.restart();
        let zs: Vec<u64> = (0..8).map(|_| Source::of(Some(&mut a)).random_range(0..1000)).collect();
        assert_eq!(xs, zs);
        let mut c = Seeded::new(43);
        assert_ne!(xs, (0..8).map(|_| Source::of(Some(&mut c)).random_range(0..1000)).collect::<Vec<_>>());
    }

    #[test]
    fn canonical_order_sorts_only_seeded_draws() {
        let members: [&[u8]; 3] = [b"c", b"a", b"b"];
        let mut s = Seeded::new(1);
        assert_eq!(canonical_order(&Source::of(Some(&mut s)), 3, |i| members[i]), Some(vec![1, 2, 0]));
        assert_eq!(canonical_order(&Source::of(None), 3, |i| members[i]), None);
    }
}
