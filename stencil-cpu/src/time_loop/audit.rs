//! The tests' audit of what the time loop lends: every box of rows a worker hands a run to
//! read or writes, per phase (barriers passed), and the check of the steps module's
//! arguments 2 to 4: within a phase no worker reads or writes a row of a grid that another
//! worker writes.
//!
//! The wavefront records into the audit of the thread that started the loop ([`audited`]);
//! outside tests nothing is recorded. What the audit sees is what the executor lends (the
//! [`RowBox`] of each `InputRows`), and the generic path checks in debug builds that every
//! row it reads lies in the box it was lent (`InputRows::row`), so together they check the
//! reads themselves on that path; a generated loop reads at the kernel's offsets from the
//! points it computes, which the boxes are made of.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use crate::input_rows::RowBox;

/// One box of rows lent to a run (read) or written, by one worker in one phase.
#[derive(Clone, Copy, Debug)]
pub(super) struct Access {
    /// The worker.
    pub(super) worker: usize,
    /// Barriers the worker had passed.
    pub(super) phase: usize,
    /// The grid's number among the grids the loop writes (chains, then lone outputs).
    pub(super) grid: usize,
    /// Whether the rows are written (else read).
    pub(super) write: bool,
    /// The rows.
    pub(super) rows: RowBox,
}

/// Every access of one time loop.
#[derive(Debug, Default)]
pub(super) struct Audit {
    accesses: Mutex<Vec<Access>>,
}

thread_local! {
    /// The audit the time loops started on this thread record into.
    static CURRENT: RefCell<Option<Arc<Audit>>> = const { RefCell::new(None) };
}

/// The audit of the calling thread, if it is in [`audited`].
pub(super) fn current() -> Option<Arc<Audit>> {
    CURRENT.with(|current| current.borrow().clone())
}

/// Runs `f`, recording what every time loop it starts lends and writes.
pub(super) fn audited<R>(f: impl FnOnce() -> R) -> (R, Arc<Audit>) {
    let audit = Arc::new(Audit::default());
    CURRENT.with(|current| *current.borrow_mut() = Some(audit.clone()));
    let result = f();
    CURRENT.with(|current| *current.borrow_mut() = None);
    (result, audit)
}

impl Audit {
    /// Records that worker `worker` in phase `phase` lends or writes `rows` of grid `grid`.
    pub(super) fn record(
        &self,
        (worker, phase): (usize, usize),
        grid: usize,
        write: bool,
        rows: RowBox,
    ) {
        let access = Access {
            worker,
            phase,
            grid,
            write,
            rows,
        };
        self.accesses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(access);
    }

    /// Everything recorded.
    pub(super) fn accesses(&self) -> Vec<Access> {
        self.accesses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Every pair of `accesses` that breaks the phases' discipline: the same phase, different
/// workers, the same grid, one of them a write, and a row in common (of the first
/// `n_row_dims` dimensions).
pub(super) fn conflicts(accesses: &[Access], n_row_dims: usize) -> Vec<(Access, Access)> {
    let mut by_phase: std::collections::BTreeMap<usize, Vec<Access>> = Default::default();
    for a in accesses {
        by_phase.entry(a.phase).or_default().push(*a);
    }
    let mut found = Vec::new();
    for list in by_phase.values() {
        for (i, a) in list.iter().enumerate() {
            for b in &list[i + 1..] {
                if a.worker != b.worker
                    && a.grid == b.grid
                    && (a.write || b.write)
                    && a.rows.meets(&b.rows, n_row_dims)
                {
                    found.push((*a, *b));
                }
            }
        }
    }
    found
}
