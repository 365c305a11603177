//! How a launch runs: its limits and the orders its blocks and threads run in
//! ([`LaunchOptions`], [`Order`]).

/// Limits of one launch, and the order its threads and blocks run in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LaunchOptions {
    /// A thread executing more instructions than this fails with
    /// [`EmulatorErrorKind::StepLimit`](super::EmulatorErrorKind::StepLimit) (default 100
    /// million).
    pub max_instructions_per_thread: u64,
    /// The order in which the threads of a block run, each to its next `bar.sync` or exit,
    /// in every round between barriers (default ascending).
    pub threads: Order,
    /// The order in which blocks run (default ascending, x fastest).
    pub blocks: Order,
}

/// An order of execution. A kernel whose results depend on it has a race (a missing
/// `bar.sync`, or blocks that exchange data): running it in several orders and comparing the
/// results catches what one order hides (a read before the write it needs shows only when
/// the reader runs first).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Order {
    /// Lowest index first.
    #[default]
    Ascending,
    /// Highest index first.
    Descending,
    /// A pseudo-random permutation from this seed (new for every round and block).
    Shuffled(u64),
}

impl Order {
    /// The `n` indices in this order; `round` varies a shuffle between rounds.
    pub(crate) fn arrange(self, n: usize, round: u64) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        match self {
            Order::Ascending => {}
            Order::Descending => v.reverse(),
            Order::Shuffled(seed) => {
                let mut state = seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for i in (1..n).rev() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    v.swap(i, (state % (i as u64 + 1)) as usize);
                }
            }
        }
        v
    }
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            max_instructions_per_thread: 100_000_000,
            threads: Order::Ascending,
            blocks: Order::Ascending,
        }
    }
}
