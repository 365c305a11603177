//! What the halo exchanges of a domain cost on this rank: [`ExchangeStats`].

/// What the exchanges of a [`Domain`](super::Domain) have cost so far on this rank
/// ([`Domain::stats`](super::Domain::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExchangeStats {
    /// Exchanges done (one per grid exchanged).
    pub exchanges: usize,
    /// Values sent to other ranks.
    pub values_sent: usize,
    /// Seconds spent packing and unpacking halos (copies within this rank included).
    pub copy_seconds: f64,
    /// Seconds spent waiting for messages after the work overlapped with them (all of the
    /// transfer time of an exchange that overlaps nothing).
    pub wait_seconds: f64,
    /// Seconds of work done while messages were in flight (the inner sweep of an overlapped
    /// exchange).
    pub overlapped_seconds: f64,
}

impl ExchangeStats {
    /// Seconds the exchanges cost beyond the work they overlapped: copies and waits.
    pub fn exposed_seconds(&self) -> f64 {
        self.copy_seconds + self.wait_seconds
    }
}
