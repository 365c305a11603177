//! A spinning barrier for the workers of one time loop, which meet several times per
//! millisecond (once per slab and step), too often to sleep and wake through the OS.
//!
//! Waiters spin on the generation counter, yielding the core after a while (so an
//! oversubscribed pool still progresses). A worker that panics poisons the barrier (through
//! [`PoisonOnPanic`]), and every waiter then panics too instead of waiting forever; the pool
//! passes the panic on to the caller.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Spins a waiter does before it starts yielding its core (under Miri, which interprets
/// every spin, none).
const SPINS_BEFORE_YIELD: u32 = if cfg!(miri) { 0 } else { 1 << 14 };

/// A reusable barrier for a fixed number of threads.
#[derive(Debug)]
pub(crate) struct SpinBarrier {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
}

impl SpinBarrier {
    /// A barrier for `threads` threads (at least 1).
    pub(crate) fn new(threads: usize) -> Self {
        SpinBarrier {
            threads: threads.max(1),
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
        }
    }

    /// Waits until every thread has called `wait` for this generation. Everything a thread
    /// wrote before its call is visible to every thread after theirs.
    ///
    /// # Panics
    /// If another thread panicked while holding a [`PoisonOnPanic`] of this barrier.
    pub(crate) fn wait(&self) {
        if self.threads == 1 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if self.poisoned.load(Ordering::Relaxed) {
                panic!("stencil-cpu: another worker of the time loop panicked");
            }
            if spins < SPINS_BEFORE_YIELD {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Poisons its barrier when dropped during a panic, so the other workers stop waiting.
pub(crate) struct PoisonOnPanic<'b>(pub(crate) &'b SpinBarrier);

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poisoned.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_sees_every_write_made_before_the_barrier() {
        let threads = 3;
        let barrier = SpinBarrier::new(threads);
        let slots: Vec<AtomicUsize> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
        std::thread::scope(|scope| {
            for t in 0..threads {
                let (barrier, slots) = (&barrier, &slots);
                scope.spawn(move || {
                    for round in 1..=200 {
                        slots[t].store(round, Ordering::Relaxed);
                        barrier.wait();
                        for slot in slots {
                            assert_eq!(slot.load(Ordering::Relaxed), round);
                        }
                        barrier.wait();
                    }
                });
            }
        });
    }

    #[test]
    fn a_panicking_worker_releases_the_others() {
        let barrier = SpinBarrier::new(2);
        let result = std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let _guard = PoisonOnPanic(&barrier);
                barrier.wait();
            });
            let failing = scope.spawn(|| {
                let _guard = PoisonOnPanic(&barrier);
                panic!("planted");
            });
            (waiter.join(), failing.join())
        });
        assert!(result.0.is_err() && result.1.is_err());
    }
}
