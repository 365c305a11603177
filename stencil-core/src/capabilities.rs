//! [`Capabilities`]: what a backend computes beyond plain sweeps, as one plain value.
//!
//! A backend describes itself with data ([`Backend::capabilities`](crate::Backend::capabilities));
//! shared logic (the facade's support check, regions, the tuner's winner check) reads these
//! fields and never asks which backend it holds. Assumes nothing about any backend.

/// What a backend computes beyond plain sweeps, and whether it is the reference the tuner
/// checks other backends against. `Default` is all `false`: a plain backend that computes
/// whole sweeps and nothing more.
///
/// ```
/// use stencil_core::Capabilities;
///
/// let gpu = Capabilities { reductions: true, in_place: true, ..Capabilities::default() };
/// assert!(!gpu.regions && !gpu.reference);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Honours [`Job::set_region`](crate::Job::set_region): computes only the region's
    /// points. Without it, [`Job::set_region`](crate::Job::set_region) refuses a region for
    /// the backend with [`ErrorKind::BackendUnavailable`](crate::ErrorKind::BackendUnavailable),
    /// so a region is never ignored.
    pub regions: bool,
    /// Computes reductions ([`crate::reduce`]), setting every result with
    /// [`Job::set_reduction`](crate::Job::set_reduction). Without it,
    /// [`check_support`](crate::check_support) refuses kernels with reductions.
    pub reductions: bool,
    /// Runs kernels that read an output in place (at offset zero, before writing it:
    /// `y = a * x + y`). Without it, [`check_support`](crate::check_support) refuses such
    /// kernels.
    pub in_place: bool,
    /// Is the reference that the tuner checks other backends against (the CPU backend is).
    /// A newly tuned winner of a backend that is not the reference runs once more on the
    /// call's own data and is compared with the CPU backend's result before it is cached; a
    /// winner that disagrees is rejected and reported (see `TuneReport::rejected` in the
    /// `stencil` crate).
    pub reference: bool,
}
