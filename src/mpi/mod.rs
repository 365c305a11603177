//! Grids distributed over MPI ranks (feature `mpi`): a block decomposition over a Cartesian
//! communicator, halo exchange with non-blocking sends and receives (overlapped with the
//! interior sweep where a call allows it), time loops across ranks, scatter, gather and a
//! parallel write of a slice.
//!
//! ```no_run
//! use stencil::mpi::Domain;
//! use stencil::prelude::*;
//!
//! stencil! {
//!     #[rotate(out -> u)]
//!     pub fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
//!         out[i, j, k] = c0 * u[i, j, k]
//!             + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
//!                   + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
//!     }
//! }
//!
//! fn main() -> Result<(), stencil::Error> {
//!     let universe = stencil::mpi::initialize()?;
//!     // 256^3 over all ranks; ghost zones of 4 points: 4 steps of this radius-1 kernel per
//!     // halo exchange.
//!     let domain = Domain::<3>::builder([256, 256, 256]).ghost(4).build(&universe.world())?;
//!     let mut u = domain.grid::<f64>()?; // this rank's part, global boundary conditions
//!     u.set_boundary(Boundary::Dirichlet(0.0));
//!     domain.fill_with(&mut u, |[i, j, k]| if i + j + k < 64 { 1.0 } else { 0.0 })?;
//!     let mut v = u.like();
//!     heat::steps(&mut u, &mut v, 0.4, 0.1).across(&domain).run(100)?;
//!     if let Some(global) = domain.gather(&u)? {
//!         println!("rank 0 holds the whole field: {:?}", global.shape());
//!     }
//!     Ok(())
//! }
//! ```
//!
//! # The layout
//!
//! A [`Domain`] cuts a global interior into one box per rank ([`Decomposition`]: a process
//! grid chosen to cut the least surface, or given with
//! [`DomainBuilder::process_grid`]). Each rank holds ordinary [`Grid`](crate::Grid)s
//! ([`Domain::grid`]) over its *local interior*: its owned box, widened by the *ghost depth*
//! on every face that has a rank behind it (a neighbour, or the wrap of a periodic
//! dimension cut over several ranks), plus the grid's halo. Kernels from `stencil!` and from
//! `KernelBuilder` run on these grids unchanged.
//!
//! A local grid carries the **global** boundary conditions (set them as on one machine, the
//! same on every rank; periodic faces exactly on the domain's periodic dimensions). They
//! apply on the faces of the global interior; on faces with a rank behind them the values
//! come from that rank. Hence **only [`Domain::exchange`] makes a local grid's halo right**:
//! a grid's own `update_halo` (and a plain `run()`, which fills its outputs' halos) fills
//! rank faces as if they were the global faces.
//!
//! # What an exchange leaves
//!
//! After [`Domain::exchange`], every point of the local storage outside the owned box (ghost
//! zone and halo) holds, bit for bit, what one grid over the whole global interior with the
//! same boundary conditions holds at that global position after `update_halo`: owned values
//! of other ranks, and boundary values by the rule of
//! [`fill_halo`](stencil_core::grid::fill_halo) (edges and corners included). Nothing writes
//! beyond a `UserManaged` face: each rank keeps what its caller put there (as one grid
//! does), and so does a corner whose value that rule copies from beyond such a face when
//! the rank reaches it across a rank face (one grid holds the copy there). Sweeps and time
//! loops across ranks therefore give the single-process result bit for bit in the owned
//! boxes, whatever the rank count, for every kernel whose single-process result does not
//! depend on the schedule (see [`Steps`](crate::Steps): all but retimed kernels).
//!
//! # Time loops
//!
//! [`Steps::across`](crate::Steps::across) runs a time loop on local grids. With a ghost depth
//! `g` of at least the kernel's radius `r`, each exchange is followed by `g / r` steps on the
//! local interior, ghost zone included (the ghost zone is computed redundantly and goes stale
//! by `r` points per step, never reaching the owned box), so one exchange serves several
//! steps and the local time loop may block them in time. With a ghost depth of 0 every step
//! exchanges, overlapped with the sweep of the owned box's inner part (the shell within `r`
//! of a rank face is swept once the halo has arrived). After the loop, the owned box and the
//! halo beyond the global interior's faces next to it hold what one process's grids hold
//! there, except beyond `UserManaged` faces (above) and, with a ghost depth of 0, beyond a
//! `Reflect` face of a cut dimension where the rank's part is no wider than the halo (the
//! mirror image lies on a neighbour); ghost zones and halos beyond rank faces are stale until
//! the next exchange. A
//! [`Steps::every`](crate::Steps::every) callback that stops the loop on one rank stops it
//! on every rank after that round of callbacks (the decisions are combined, one all-reduce
//! per round).
//!
//! # Cores
//!
//! [`DomainBuilder::build`] gives each rank its share of the machine's cores
//! ([`stencil_cpu::set_core_share`]): the ranks on one machine (from the shared-memory
//! communicator) that may run on the same cores split them into disjoint shares, so CPU
//! pools built afterwards pin their workers apart and start the share's number of threads
//! by default. A global CPU backend started before the domain keeps its threads and cores.
//!
//! # Errors and failures
//!
//! Calls that every rank makes with the same arguments (building a domain, allocating grids,
//! exchanges, time loops) fail on every rank alike, with an `Err`, never a hang: a halo or
//! ghost zone wider than a rank's part, a process grid that does not match the rank count,
//! boundary conditions that do not match the domain's periodicity. A failure on one rank only
//! (an I/O error, a bug in the caller's code) should end the job: [`Domain::abort_on_error`]
//! prints the error and aborts every rank (`MPI_Abort`), so the others do not wait forever.

mod decomp;
mod domain;
mod exchange;
#[cfg(feature = "output")]
mod output;
mod plan;
mod scatter;
mod stages;
mod stats;
mod steps;
mod tuning;

use ::mpi::datatype::Equivalence;

use stencil_core::{Element, Error, ErrorKind, Result};

pub use decomp::Decomposition;
pub use domain::{Domain, DomainBuilder};
pub use stats::ExchangeStats;

/// The MPI bindings (the `mpi` crate) this module is built on, for what it does not wrap
/// (communicators, collectives).
pub use ::mpi as bindings;

/// An element type that MPI can send: `f32` and `f64`.
pub trait MpiElement: Element + Equivalence + 'static {}

impl<T: Element + Equivalence + 'static> MpiElement for T {}

/// The tag of every message this module sends.
const TAG: i32 = 0x5354;

/// Initialises MPI (once per process; keep the result alive until the end of `main`, whose
/// drop finalises MPI).
///
/// # Errors
/// [`ErrorKind::Backend`] when MPI was already initialised.
pub fn initialize() -> Result<::mpi::environment::Universe> {
    ::mpi::initialize().ok_or_else(|| {
        Error::new(
            ErrorKind::Backend,
            "MPI is already initialised in this process",
        )
    })
}

/// Calls `f(start, len)` for every row (run along the last dimension) of the box `lo..hi`,
/// in C order.
fn for_each_row<const D: usize>(
    lo: [usize; D],
    hi: [usize; D],
    mut f: impl FnMut([usize; D], usize),
) {
    if (0..D).any(|d| lo[d] >= hi[d]) {
        return;
    }
    let last = D - 1;
    let mut p = lo;
    loop {
        f(p, hi[last] - lo[last]);
        let mut d = last;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            p[d] += 1;
            if p[d] < hi[d] {
                break;
            }
            p[d] = lo[d];
        }
    }
}
