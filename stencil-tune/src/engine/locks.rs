//! The lock of the engine's process-wide maps (the memo of choices, the machines measured),
//! which takes over a lock that a panicking holder poisoned.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking over a lock a panicking holder poisoned.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
