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
//! [`DomainBuilder::process_grid`]). Each rank holds ordinary [`Grid`]s
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
//! depend on the schedule (see [`crate::steps`]: all but retimed kernels).
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
mod plan;

use std::sync::Mutex;
use std::time::Instant;

use ::mpi::collective::{CommunicatorCollectives, Root};
use ::mpi::datatype::Equivalence;
use ::mpi::point_to_point::{Destination, Source as _};
use ::mpi::topology::{CartesianCommunicator, Communicator, SimpleCommunicator};

use stencil_core::grid::{Boundary, Grid, Side};
use stencil_core::schedule::wire;
use stencil_core::{Element, Error, ErrorKind, Result};

pub use decomp::Decomposition;
use plan::{FaceKind, Faces, Layout, ValueRun, face_kinds};

/// The MPI bindings (the `mpi` crate) this module is built on, for what it does not wrap
/// (communicators, collectives).
pub use ::mpi as bindings;

/// An element type that MPI can send: `f32` and `f64`.
pub trait MpiElement: Element + Equivalence + 'static {}

impl<T: Element + Equivalence + 'static> MpiElement for T {}

/// Message buffers kept between exchanges (send buffers, receive buffers) of one element
/// type, so that an exchange neither allocates nor faults in fresh pages.
type Buffers<T> = (Vec<Vec<T>>, Vec<Vec<T>>);

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

/// How a [`Domain`] is built: global shape, halo, ghost depth, periodic dimensions and,
/// optionally, the process grid. From [`Domain::builder`].
#[derive(Clone, Debug)]
#[must_use = "a DomainBuilder does nothing until `.build(..)`"]
pub struct DomainBuilder<const D: usize> {
    shape: [usize; D],
    halo: usize,
    ghost: usize,
    periodic: [bool; D],
    dims: Option<[usize; D]>,
}

impl<const D: usize> DomainBuilder<D> {
    /// The halo width of the local grids (default [`DEFAULT_HALO`](crate::DEFAULT_HALO)):
    /// at least the radius of every kernel run on them.
    pub fn halo(mut self, halo: usize) -> Self {
        self.halo = halo;
        self
    }

    /// The ghost depth on rank faces (default 0): time loops exchange once per
    /// `ghost / radius` steps (every step when it is 0).
    pub fn ghost(mut self, ghost: usize) -> Self {
        self.ghost = ghost;
        self
    }

    /// Which dimensions wrap around (default none). Grids on the domain must have
    /// `Boundary::Periodic` on both faces of exactly these dimensions.
    pub fn periodic(mut self, periodic: [bool; D]) -> Self {
        self.periodic = periodic;
        self
    }

    /// Ranks along each dimension, instead of the process grid that cuts the least surface.
    pub fn process_grid(mut self, dims: [usize; D]) -> Self {
        self.dims = Some(dims);
        self
    }

    /// The domain over the ranks of `comm` (every rank of it calls this with the same
    /// arguments). Ranks keep their numbers in `comm`. Also declares to the CPU backend how
    /// many ranks share this machine's last-level cache ([`Domain::ranks_on_node`]), and
    /// this rank's share of the cores ([`stencil_cpu::set_core_share`]): the ranks on this
    /// machine that may run on the same cores (all of them when the launcher does not bind
    /// ranks to cores) split those cores into disjoint shares, and CPU pools built
    /// afterwards (the global backend on its first use, [`stencil_cpu::CpuBackend::new`])
    /// pin their workers within this rank's share and start as many threads as it holds
    /// unless `STENCIL_THREADS` or an explicit count says otherwise. Build the domain before
    /// anything runs on the global backend: a global backend started earlier keeps its
    /// threads and cores (a `tracing` warning says so when ranks share cores).
    ///
    /// # Errors
    /// - [`ErrorKind::InvalidShape`]: a 0-D domain (it has no dimension to cut, whatever the
    ///   ghost depth); an extent is 0; no process grid of `comm`'s size cuts the interior
    ///   into parts of at least `max(halo, ghost)` points along every cut dimension (a halo
    ///   or ghost zone wider than a rank's part would reach past its neighbour), or the given
    ///   process grid does not.
    /// - [`ErrorKind::BadArgument`]: a given process grid whose product is not `comm`'s size.
    pub fn build(self, comm: &impl Communicator) -> Result<Domain<D>> {
        if D == 0 {
            return Err(Error::new(
                ErrorKind::InvalidShape,
                "a distributed interior needs at least one dimension to cut over the ranks \
                 (this one is 0-D)",
            ));
        }
        if self.shape.contains(&0) {
            return Err(Error::new(
                ErrorKind::InvalidShape,
                format!("a distributed interior of shape {:?}", self.shape),
            ));
        }
        let ranks = comm.size() as usize;
        let min_part = self.halo.max(self.ghost).max(1);
        let decomp = match self.dims {
            Some(dims) => {
                if dims.iter().product::<usize>() != ranks {
                    return Err(Error::new(
                        ErrorKind::BadArgument,
                        format!(
                            "process grid {dims:?} has not the {ranks} ranks of the communicator"
                        ),
                    ));
                }
                Decomposition::with_dims(self.shape, dims, min_part)?
            }
            None => Decomposition::new(self.shape, ranks, min_part)?,
        };
        let dims: Vec<i32> = decomp.dims().iter().map(|&p| p as i32).collect();
        let cart = comm
            .create_cartesian_communicator(&dims, &self.periodic, false)
            .ok_or_else(|| {
                Error::new(ErrorKind::Backend, "MPI_Cart_create gave no communicator")
            })?;
        let rank = cart.rank() as usize;
        // Ranks on this machine share its last-level cache: the CPU backend sizes its blocks
        // and temporal blocking by this process's share.
        let node = cart.split_shared(cart.rank());
        let node_ranks = node.size() as usize;
        stencil_cpu::set_cache_sharers(node_ranks);
        // Ranks that may run on the same cores split them, so their pools' workers never
        // stack on one core and each starts its share of threads by default.
        let (index, count) = core_group(&node);
        if !stencil_cpu::set_core_share(index, count) && count > 1 {
            tracing::warn!(
                "stencil::mpi: the global CPU backend started before the domain was built: it \
                 keeps its {} threads on all of this rank's cores, which {count} ranks share \
                 (build the domain first)",
                stencil_cpu::CpuBackend::global().threads()
            );
        }
        Ok(Domain {
            comm: cart,
            layout: Layout {
                decomp,
                ghost: self.ghost,
                halo: self.halo,
                periodic: self.periodic,
            },
            rank,
            node_ranks,
            plans: Mutex::new(Vec::new()),
            stats: Mutex::new(ExchangeStats::default()),
            buffers: Mutex::new(None),
        })
    }
}

/// What the exchanges of a [`Domain`] have cost so far on this rank
/// ([`Domain::stats`]).
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

/// One rank's view of a global interior cut over the ranks of a communicator: its box, the
/// local grids' layout, and the halo exchange. See the [module documentation](self).
pub struct Domain<const D: usize> {
    comm: CartesianCommunicator,
    layout: Layout<D>,
    rank: usize,
    /// Ranks of the communicator on this machine (this one included).
    node_ranks: usize,
    /// Exchange plans, one per set of face kinds met so far.
    plans: Mutex<Vec<(Faces<D>, std::sync::Arc<Plan<D>>)>>,
    stats: Mutex<ExchangeStats>,
    /// The last exchange's buffers ([`Buffers`] of its element type).
    buffers: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

/// The exchange plan of this rank for grids of one set of face kinds.
struct Plan<const D: usize> {
    /// Per peer: the runs received from it, in the order it sends them (local destination,
    /// length) and their total length.
    recv: Vec<Peer<D>>,
    /// Per peer: the runs sent to it (local source, length).
    send: Vec<Peer<D>>,
    /// Copies within this rank (destination, source, length), of points beyond a rank face
    /// (the grid's own fill gives the others).
    local: Vec<([isize; D], [isize; D], usize)>,
    /// Runs given a Dirichlet face's value, beyond a rank face.
    values: Vec<ValueRun<D>>,
    /// Whether the grid's own fill (rank faces left alone) gives the other points; false
    /// where it cannot (a `Reflect` face of a cut dimension whose local extent is not wider
    /// than the halo), and then `local` and `values` hold every such point.
    own_fill: bool,
}

struct Peer<const D: usize> {
    rank: usize,
    runs: Vec<([isize; D], usize)>,
    points: usize,
}

impl<const D: usize> Domain<D> {
    /// Starts building the domain of a global interior of `shape`.
    pub fn builder(shape: [usize; D]) -> DomainBuilder<D> {
        DomainBuilder {
            shape,
            halo: stencil_core::grid::DEFAULT_HALO,
            ghost: 0,
            periodic: [false; D],
            dims: None,
        }
    }

    /// This rank's number in the domain's communicator.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks.
    pub fn ranks(&self) -> usize {
        self.layout.decomp.ranks()
    }

    /// Number of ranks on this machine (this one included), which share its last-level
    /// cache: building the domain declares them to the CPU backend
    /// ([`stencil_cpu::set_cache_sharers`]), which sizes its blocks and temporal blocking by
    /// this process's share.
    pub fn ranks_on_node(&self) -> usize {
        self.node_ranks
    }

    /// The Cartesian communicator the domain's messages go through.
    pub fn communicator(&self) -> &CartesianCommunicator {
        &self.comm
    }

    /// The decomposition: global shape, process grid, every rank's box.
    pub fn decomposition(&self) -> &Decomposition<D> {
        &self.layout.decomp
    }

    /// The global interior's extents.
    pub fn shape(&self) -> [usize; D] {
        self.layout.decomp.shape()
    }

    /// The halo width of local grids.
    pub fn halo(&self) -> usize {
        self.layout.halo
    }

    /// The ghost depth on rank faces.
    pub fn ghost(&self) -> usize {
        self.layout.ghost
    }

    /// Which dimensions wrap around.
    pub fn periodic(&self) -> [bool; D] {
        self.layout.periodic
    }

    /// The box this rank owns, `lo[d]..hi[d]`, in global coordinates.
    pub fn owned(&self) -> ([usize; D], [usize; D]) {
        self.layout.decomp.owned(self.rank)
    }

    /// The owned box in local interior coordinates.
    pub fn owned_local(&self) -> ([usize; D], [usize; D]) {
        self.layout.owned_local(self.rank)
    }

    /// The extents of this rank's local interior (owned box and ghost zones).
    pub fn local_shape(&self) -> [usize; D] {
        self.layout.local_box(self.rank).1
    }

    /// The global coordinates of local interior point 0 (negative or past the extent where a
    /// ghost zone wraps around a periodic dimension).
    pub fn local_origin(&self) -> [isize; D] {
        self.layout.local_box(self.rank).0
    }

    /// Whether face (`dim`, `side`) of this rank's box has a rank behind it (its values come
    /// from exchanges, not from the boundary condition).
    pub fn is_rank_face(&self, dim: usize, side: Side) -> bool {
        dim < D && self.layout.rank_face(self.rank, dim, side)
    }

    /// What the exchanges have cost on this rank so far.
    pub fn stats(&self) -> ExchangeStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the exchange statistics back to zero.
    pub fn reset_stats(&self) {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner()) = ExchangeStats::default();
    }

    /// A zero local grid of this rank: the local interior, the domain's halo, periodic faces
    /// on the periodic dimensions and `Dirichlet(0)` elsewhere (set the global conditions
    /// with `set_boundary` / `set_face_boundary`, the same on every rank).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidShape`] when the storage size overflows.
    pub fn grid<T: MpiElement>(&self) -> Result<Grid<T, D>> {
        let mut grid = Grid::with_halo(self.local_shape(), self.layout.halo)?;
        for d in 0..D {
            if self.layout.periodic[d] {
                for side in Side::BOTH {
                    grid.set_face_boundary(d, side, Boundary::Periodic)?;
                }
            }
        }
        Ok(grid)
    }

    /// The boundary conditions a local time loop or sweep applies on this rank: the grid's
    /// (global) conditions, with `UserManaged` on rank faces, which exchanges fill.
    pub fn local_faces<T: Element>(&self, faces: &[[Boundary<T>; 2]; D]) -> [[Boundary<T>; 2]; D] {
        std::array::from_fn(|d| {
            std::array::from_fn(|s| {
                if self.layout.rank_face(self.rank, d, Side::BOTH[s]) {
                    Boundary::UserManaged
                } else {
                    faces[d][s]
                }
            })
        })
    }

    /// Sets every owned point of `grid` to `f` of its global coordinates (in C order), then
    /// [`exchange`](Self::exchange)s. Nothing else is written but what the exchange fills:
    /// the caller's values beyond `UserManaged` faces stay.
    ///
    /// # Errors
    /// As [`exchange`](Self::exchange).
    pub fn fill_with<T: MpiElement>(
        &self,
        grid: &mut Grid<T, D>,
        mut f: impl FnMut([usize; D]) -> T,
    ) -> Result<()> {
        self.check_grid(grid)?;
        let (lo, hi) = self.owned_local();
        let origin = self.local_origin();
        let geom = *grid.geometry();
        // Only the owned box: the exchange fills the rest (a grid's own fill would write
        // halo points beyond `UserManaged` faces, treating rank faces as global ones).
        let data = grid.as_mut_slice();
        for_each_row(lo, hi, |start, len| {
            let at = geom.index(&start.map(|x| x as isize));
            for (k, slot) in data[at..at + len].iter_mut().enumerate() {
                let mut p = start;
                p[D - 1] += k;
                *slot = f(std::array::from_fn(|d| {
                    (origin[d] + p[d] as isize) as usize
                }));
            }
        });
        self.exchange(grid)
    }

    /// Fills every point of `grid` outside this rank's owned box (ghost zones and halo) as
    /// the [module documentation](self) says, from the ranks that own them and the grid's
    /// boundary conditions. Collective: every rank calls it for the same grid.
    ///
    /// # Errors
    /// [`ErrorKind::ShapeMismatch`] for a grid of another shape than
    /// [`local_shape`](Self::local_shape); [`ErrorKind::HaloTooNarrow`] for a halo narrower
    /// than the domain's; [`ErrorKind::BadArgument`] for periodic faces other than the
    /// domain's periodic dimensions. Every rank fails alike when the grids' faces agree.
    pub fn exchange<T: MpiElement>(&self, grid: &mut Grid<T, D>) -> Result<()> {
        self.exchange_with(grid, |_| ())
    }

    /// [`exchange`](Self::exchange), with `work` run while the messages are in flight; it
    /// gets the grid read-only (its owned box is final; points outside it are not).
    ///
    /// # Errors
    /// As [`exchange`](Self::exchange).
    pub fn exchange_with<T: MpiElement, R>(
        &self,
        grid: &mut Grid<T, D>,
        work: impl FnOnce(&Grid<T, D>) -> R,
    ) -> Result<R> {
        self.check_grid(grid)?;
        let plan = self.plan(&face_kinds(grid.boundaries()))?;
        let copy_timer = Instant::now();
        let geom = *grid.geometry();
        let kept = self
            .buffers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let (mut sends, mut recvs): Buffers<T> = kept
            .and_then(|b| b.downcast::<Buffers<T>>().ok())
            .map_or_else(Default::default, |b| *b);
        sends.resize_with(plan.send.len(), Vec::new);
        recvs.resize_with(plan.recv.len(), Vec::new);
        for (buf, peer) in sends.iter_mut().zip(&plan.send) {
            buf.clear();
            for (src, len) in &peer.runs {
                let at = geom.index(src);
                buf.extend_from_slice(&grid.as_slice()[at..at + len]);
            }
        }
        for (buf, peer) in recvs.iter_mut().zip(&plan.recv) {
            buf.resize(peer.points, T::ZERO);
        }
        let mut copy_seconds = copy_timer.elapsed().as_secs_f64();
        let (result, work_seconds, wait_seconds) = ::mpi::request::scope(|scope| {
            let mut requests = Vec::with_capacity(sends.len() + recvs.len());
            for (buf, peer) in recvs.iter_mut().zip(&plan.recv) {
                requests.push(
                    self.comm
                        .process_at_rank(peer.rank as i32)
                        .immediate_receive_into_with_tag(scope, &mut buf[..], TAG),
                );
            }
            for (buf, peer) in sends.iter().zip(&plan.send) {
                requests.push(
                    self.comm
                        .process_at_rank(peer.rank as i32)
                        .immediate_send_with_tag(scope, &buf[..], TAG),
                );
            }
            let work_timer = Instant::now();
            let result = work(grid);
            let work_seconds = work_timer.elapsed().as_secs_f64();
            let wait_timer = Instant::now();
            for request in requests {
                request.wait();
            }
            (result, work_seconds, wait_timer.elapsed().as_secs_f64())
        });
        let copy_timer = Instant::now();
        let faces = *grid.boundaries();
        let data = grid.time_loop_view().data;
        for (buf, peer) in recvs.iter().zip(&plan.recv) {
            let mut from = 0;
            for (dst, len) in &peer.runs {
                let at = geom.index(dst);
                data[at..at + len].copy_from_slice(&buf[from..from + len]);
                from += len;
            }
        }
        for (dst, src, len) in &plan.local {
            let (to, from) = (geom.index(dst), geom.index(src));
            data.copy_within(from..from + len, to);
        }
        for run in &plan.values {
            let Boundary::Dirichlet(value) = faces[run.face.0][run.face.1.index()] else {
                unreachable!("value runs come from Dirichlet faces (the plan's key)")
            };
            let at = geom.index(&run.dst);
            data[at..at + run.len].fill(value);
        }
        // Other points whose value comes from this rank (boundary values, copies of its own
        // points) are what the grid's own fill gives with rank faces left alone, now that
        // the points it copies from beyond rank faces have arrived: the fill's order
        // resolves each point by its last outside dimension, as the global fill does, and
        // on the faces it fills the local extent is the global one (or holds every point a
        // copying condition reads).
        if plan.own_fill {
            let local_faces = self.local_faces(&faces);
            stencil_core::grid::fill_halo(&mut grid.time_loop_view(), &local_faces);
        }
        grid.mark_halo_filled();
        copy_seconds += copy_timer.elapsed().as_secs_f64();
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.exchanges += 1;
        stats.values_sent += sends.iter().map(Vec::len).sum::<usize>();
        stats.copy_seconds += copy_seconds;
        stats.wait_seconds += wait_seconds;
        stats.overlapped_seconds += work_seconds;
        drop(stats);
        *self.buffers.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new((sends, recvs)));
        Ok(result)
    }

    /// Checks that `grid` is a local grid of this domain.
    fn check_grid<T: Element>(&self, grid: &Grid<T, D>) -> Result<()> {
        if grid.shape() != self.local_shape() {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!(
                    "grid of shape {:?} on rank {} whose local interior is {:?} (allocate \
                     local grids with `Domain::grid`)",
                    grid.shape(),
                    self.rank,
                    self.local_shape()
                ),
            ));
        }
        if grid.halo() < self.layout.halo {
            return Err(Error::new(
                ErrorKind::HaloTooNarrow,
                format!(
                    "grid with a halo of {} on a domain whose halo is {}",
                    grid.halo(),
                    self.layout.halo
                ),
            ));
        }
        self.layout.check_faces(&face_kinds(grid.boundaries()))
    }

    /// The exchange plan for grids with faces `kinds`, built on first use (collectively:
    /// every rank meets the same grids in the same order).
    fn plan(&self, kinds: &Faces<D>) -> Result<std::sync::Arc<Plan<D>>> {
        let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, plan)) = plans.iter().find(|(k, _)| k == kinds) {
            return Ok(plan.clone());
        }
        let plan = std::sync::Arc::new(self.build_plan(kinds));
        plans.push((*kinds, plan.clone()));
        Ok(plan)
    }

    /// Builds this rank's plan: its fill runs, and from every other rank the runs it wants
    /// from this one (one all-to-all of counts, then the run lists).
    fn build_plan(&self, kinds: &Faces<D>) -> Plan<D> {
        let runs = self.layout.fill_runs(self.rank, kinds);
        let ranks = self.ranks();
        let n = self.local_shape();
        // A local Reflect fill mirrors within the local extent, the same as the global one
        // only when that extent is wider than the halo.
        let own_fill = (0..D).all(|d| {
            self.layout.decomp.dims()[d] == 1
                || n[d] > self.layout.halo
                || !kinds[d].contains(&FaceKind::Reflect)
        });
        // Whether any point of the run of `len` points from `p` (along the last dimension)
        // lies beyond a rank face, where the grid's own fill leaves it.
        let beyond_rank_face = |p: &[isize; D], len: usize| {
            !own_fill
                || (0..D).any(|d| {
                    let end = if d == D - 1 {
                        p[d] + len as isize
                    } else {
                        p[d] + 1
                    };
                    (p[d] < 0 && self.layout.rank_face(self.rank, d, Side::Low))
                        || (end > n[d] as isize && self.layout.rank_face(self.rank, d, Side::High))
                })
        };
        let mut recv: Vec<Peer<D>> = Vec::new();
        let mut local = Vec::new();
        let mut requests: Vec<Vec<i64>> = vec![Vec::new(); ranks];
        for c in &runs.copies {
            if c.owner == self.rank {
                if beyond_rank_face(&c.dst, c.len) {
                    local.push((c.dst, c.src, c.len));
                }
                continue;
            }
            if recv.last().is_none_or(|p| p.rank != c.owner) {
                recv.push(Peer {
                    rank: c.owner,
                    runs: Vec::new(),
                    points: 0,
                });
            }
            let peer = recv.last_mut().expect("pushed above");
            peer.runs.push((c.dst, c.len));
            peer.points += c.len;
            let request = &mut requests[c.owner];
            request.extend(c.src.iter().map(|&x| x as i64));
            request.push(c.len as i64);
        }
        // How many numbers each rank asks of each.
        let counts: Vec<i32> = requests.iter().map(|r| r.len() as i32).collect();
        let mut incoming = vec![0i32; ranks];
        self.comm.all_to_all_into(&counts[..], &mut incoming[..]);
        let mut asked: Vec<Vec<i64>> = incoming.iter().map(|&n| vec![0; n as usize]).collect();
        ::mpi::request::scope(|scope| {
            let mut pending = Vec::new();
            for (r, buf) in asked.iter_mut().enumerate() {
                if !buf.is_empty() {
                    pending.push(
                        self.comm
                            .process_at_rank(r as i32)
                            .immediate_receive_into_with_tag(scope, &mut buf[..], TAG + 1),
                    );
                }
            }
            for (r, buf) in requests.iter().enumerate() {
                if !buf.is_empty() {
                    pending.push(self.comm.process_at_rank(r as i32).immediate_send_with_tag(
                        scope,
                        &buf[..],
                        TAG + 1,
                    ));
                }
            }
            for p in pending {
                p.wait();
            }
        });
        let send = asked
            .into_iter()
            .enumerate()
            .filter(|(_, a)| !a.is_empty())
            .map(|(r, a)| {
                let runs: Vec<([isize; D], usize)> = a
                    .chunks_exact(D + 1)
                    .map(|c| (std::array::from_fn(|d| c[d] as isize), c[D] as usize))
                    .collect();
                Peer {
                    rank: r,
                    points: runs.iter().map(|r| r.1).sum(),
                    runs,
                }
            })
            .collect();
        Plan {
            recv,
            send,
            local,
            values: runs
                .values
                .into_iter()
                .filter(|v| beyond_rank_face(&v.dst, v.len))
                .collect(),
            own_fill,
        }
    }

    /// Copies the owned box of every rank's `local` grid into one global grid on rank
    /// `root`: `Some(grid)` there (halo `local.halo()`, the local grid's boundary conditions,
    /// halo filled; zero beyond `UserManaged` faces, as the local grids' values there are
    /// not gathered), `None` elsewhere. Collective.
    ///
    /// # Errors
    /// As [`exchange`](Self::exchange) for a grid that is not a local grid of the domain;
    /// [`ErrorKind::InvalidShape`] when the global grid's storage overflows (on `root`).
    pub fn gather_to<T: MpiElement>(
        &self,
        local: &Grid<T, D>,
        root: usize,
    ) -> Result<Option<Grid<T, D>>> {
        self.check_grid(local)?;
        let mine = self.pack_owned(local);
        let root_process = self.comm.process_at_rank(root as i32);
        if self.rank != root {
            root_process.send_with_tag(&mine[..], TAG + 2);
            return Ok(None);
        }
        let mut global = Grid::<T, D>::with_halo(self.shape(), local.halo())?;
        for r in 0..self.ranks() {
            let (lo, hi) = self.layout.decomp.owned(r);
            let n: usize = (0..D).map(|d| hi[d] - lo[d]).product();
            let values = if r == root {
                mine.clone()
            } else {
                let mut buf = vec![T::ZERO; n];
                self.comm
                    .process_at_rank(r as i32)
                    .receive_into_with_tag(&mut buf[..], TAG + 2);
                buf
            };
            let mut it = values.into_iter();
            for_each_row(lo, hi, |start, len| {
                let at = global.geometry().index(&start.map(|x| x as isize));
                for (slot, v) in global.as_mut_slice()[at..at + len].iter_mut().zip(&mut it) {
                    *slot = v;
                }
            });
        }
        for (d, pair) in local.boundaries().iter().enumerate() {
            for (side, &b) in Side::BOTH.iter().zip(pair) {
                global.set_face_boundary(d, *side, b)?;
            }
        }
        global.update_halo();
        Ok(Some(global))
    }

    /// [`gather_to`](Self::gather_to) rank 0.
    ///
    /// # Errors
    /// As [`gather_to`](Self::gather_to).
    pub fn gather<T: MpiElement>(&self, local: &Grid<T, D>) -> Result<Option<Grid<T, D>>> {
        self.gather_to(local, 0)
    }

    /// Copies each rank's owned box of `global` (given on rank 0, `None` elsewhere) into its
    /// `local` grid, gives `local` the global grid's boundary conditions, and
    /// [`exchange`](Self::exchange)s. Collective.
    ///
    /// # Errors
    /// Every rank fails alike, so none is left waiting, when the arguments of any rank are
    /// wrong (the rank at fault gets the error itself; the others get the same kind, naming
    /// that rank):
    /// - [`ErrorKind::BadArgument`]: rank 0 gives no global grid (`None`);
    /// - [`ErrorKind::ShapeMismatch`]: the global grid's shape is not the domain's, or a local
    ///   grid's is not its rank's [`local_shape`](Self::local_shape);
    /// - [`ErrorKind::HaloTooNarrow`]: a local grid's halo is narrower than the domain's;
    ///
    /// then as [`exchange`](Self::exchange).
    pub fn scatter<T: MpiElement>(
        &self,
        global: Option<&Grid<T, D>>,
        local: &mut Grid<T, D>,
    ) -> Result<()> {
        // Every rank's checks, shared before anything else is sent: a rank that returned
        // alone would leave the others waiting for its messages.
        let mine = self.scatter_check(global, local);
        let code = mine.as_ref().map_or(0u8, |e| match e.kind() {
            ErrorKind::BadArgument => 1,
            ErrorKind::ShapeMismatch => 2,
            _ => 3,
        });
        let mut codes = vec![0u8; self.ranks()];
        self.comm.all_gather_into(&code, &mut codes[..]);
        if let Some(e) = mine {
            return Err(e);
        }
        if let Some((r, &c)) = codes.iter().enumerate().find(|(_, c)| **c != 0) {
            let (kind, what) = match c {
                1 => (ErrorKind::BadArgument, "gave no global grid"),
                2 => (ErrorKind::ShapeMismatch, "gave a grid of the wrong shape"),
                _ => (
                    ErrorKind::HaloTooNarrow,
                    "gave a local grid with too narrow a halo",
                ),
            };
            return Err(Error::new(
                kind,
                format!("scatter: rank {r} {what}, so no rank scatters"),
            ));
        }
        let global = if self.rank == 0 { global } else { None };
        let root = self.comm.process_at_rank(0);
        // The global faces: kinds and values, from rank 0.
        let mut kinds = [0u8; 64];
        let mut values = vec![T::ZERO; 2 * D];
        if let Some(global) = global {
            for (d, pair) in global.boundaries().iter().enumerate() {
                for (s, b) in pair.iter().enumerate() {
                    kinds[2 * d + s] = FaceKind::of(b) as u8;
                    if let Boundary::Dirichlet(v) = b {
                        values[2 * d + s] = *v;
                    }
                }
            }
        }
        root.broadcast_into(&mut kinds[..]);
        root.broadcast_into(&mut values[..]);
        for d in 0..D {
            for (s, side) in Side::BOTH.into_iter().enumerate() {
                let b = match kinds[2 * d + s] {
                    k if k == FaceKind::Dirichlet as u8 => Boundary::Dirichlet(values[2 * d + s]),
                    k if k == FaceKind::Periodic as u8 => Boundary::Periodic,
                    k if k == FaceKind::ZeroGradient as u8 => Boundary::ZeroGradient,
                    k if k == FaceKind::Reflect as u8 => Boundary::Reflect,
                    _ => Boundary::UserManaged,
                };
                local.set_face_boundary(d, side, b)?;
            }
        }
        let (own_lo, own_hi) = self.owned_local();
        if let Some(global) = global {
            for r in 0..self.ranks() {
                let (lo, hi) = self.layout.decomp.owned(r);
                let mut buf = Vec::new();
                for_each_row(lo, hi, |start, len| {
                    let at = global.geometry().index(&start.map(|x| x as isize));
                    buf.extend_from_slice(&global.as_slice()[at..at + len]);
                });
                if r == 0 {
                    self.unpack_owned(local, own_lo, own_hi, &buf);
                } else {
                    self.comm
                        .process_at_rank(r as i32)
                        .send_with_tag(&buf[..], TAG + 3);
                }
            }
        } else {
            let n: usize = (0..D).map(|d| own_hi[d] - own_lo[d]).product();
            let mut buf = vec![T::ZERO; n];
            root.receive_into_with_tag(&mut buf[..], TAG + 3);
            self.unpack_owned(local, own_lo, own_hi, &buf);
        }
        self.exchange(local)
    }

    /// What is wrong with this rank's arguments to [`scatter`](Self::scatter), if anything:
    /// its local grid's shape and halo, and on rank 0 the global grid.
    fn scatter_check<T: MpiElement>(
        &self,
        global: Option<&Grid<T, D>>,
        local: &Grid<T, D>,
    ) -> Option<Error> {
        if self.rank == 0 {
            let Some(global) = global else {
                return Some(Error::new(
                    ErrorKind::BadArgument,
                    "scatter: rank 0 must give the global grid",
                ));
            };
            if global.shape() != self.shape() {
                return Some(Error::new(
                    ErrorKind::ShapeMismatch,
                    format!(
                        "scatter: the global grid has shape {:?}, the domain {:?}",
                        global.shape(),
                        self.shape()
                    ),
                ));
            }
        }
        if local.shape() != self.local_shape() {
            return Some(Error::new(
                ErrorKind::ShapeMismatch,
                format!(
                    "scatter: local grid of shape {:?} on rank {} whose local interior is {:?} \
                     (allocate local grids with `Domain::grid`)",
                    local.shape(),
                    self.rank,
                    self.local_shape()
                ),
            ));
        }
        if local.halo() < self.layout.halo {
            return Some(Error::new(
                ErrorKind::HaloTooNarrow,
                format!(
                    "scatter: local grid with a halo of {} on a domain whose halo is {}",
                    local.halo(),
                    self.layout.halo
                ),
            ));
        }
        None
    }

    /// The owned box of `grid`, row by row.
    fn pack_owned<T: Element>(&self, grid: &Grid<T, D>) -> Vec<T> {
        let (lo, hi) = self.owned_local();
        let mut buf = Vec::new();
        for_each_row(lo, hi, |start, len| {
            let at = grid.geometry().index(&start.map(|x| x as isize));
            buf.extend_from_slice(&grid.as_slice()[at..at + len]);
        });
        buf
    }

    fn unpack_owned<T: Element>(
        &self,
        grid: &mut Grid<T, D>,
        lo: [usize; D],
        hi: [usize; D],
        values: &[T],
    ) {
        let geom = *grid.geometry();
        let data = grid.as_mut_slice();
        let mut from = 0;
        for_each_row(lo, hi, |start, len| {
            let at = geom.index(&start.map(|x| x as isize));
            data[at..at + len].copy_from_slice(&values[from..from + len]);
            from += len;
        });
    }

    /// Returns the value of `result`, or prints its error with this rank's number on
    /// standard error and aborts every rank of the communicator (`MPI_Abort`, exit code 1):
    /// for failures that may happen on one rank only, which would leave the others waiting.
    pub fn abort_on_error<V>(&self, result: Result<V>) -> V {
        match result {
            Ok(v) => v,
            Err(e) => {
                eprintln!("stencil: rank {} of {}: {e}", self.rank, self.ranks());
                self.comm.abort(1)
            }
        }
    }

    /// Shares `value` of rank `root` with every rank (a broadcast over the domain's
    /// communicator).
    pub fn broadcast<V: ::mpi::datatype::BufferMut + ?Sized>(&self, value: &mut V, root: usize) {
        self.comm.process_at_rank(root as i32).broadcast_into(value);
    }

    /// Blocks until every rank has called it.
    pub fn barrier(&self) {
        self.comm.barrier();
    }

    /// The duplicate of the domain's communicator, as a plain communicator.
    pub fn duplicate_communicator(&self) -> SimpleCommunicator {
        self.comm.duplicate()
    }
}

/// This rank's place among the ranks of `node` (the ranks on one machine) that may run on
/// the same cores, which they then split: its index among them and how many they are.
/// Ranks that the launcher bound to distinct cores are alone in their group and keep their
/// cores; ranks it did not bind (or bound to one socket together) split what they share.
/// Collective over `node`.
fn core_group(node: &SimpleCommunicator) -> (usize, usize) {
    let cpus = stencil_cpu::allowed_cpus();
    let mine = cpus.last().map_or(1, |&c| c / 64 + 1) as u64;
    let mut words = 0u64;
    node.all_reduce_into(&mine, &mut words, ::mpi::collective::SystemOperation::max());
    let words = words as usize;
    let mut mask = vec![0u64; words];
    for c in cpus {
        mask[c / 64] |= 1 << (c % 64);
    }
    let mut all = vec![0u64; words * node.size() as usize];
    node.all_gather_into(&mask[..], &mut all[..]);
    let same: Vec<usize> = (0..node.size() as usize)
        .filter(|&r| all[r * words..(r + 1) * words] == mask[..])
        .collect();
    let index = same
        .iter()
        .position(|&r| r == node.rank() as usize)
        .expect("this rank's own mask is among the gathered ones");
    (index, same.len())
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

impl<T: MpiElement, const D: usize> crate::steps::Distribution<T, D> for Domain<D> {
    fn exchange(&self, grid: &mut Grid<T, D>) -> Result<()> {
        Domain::exchange(self, grid)
    }

    fn exchange_with(
        &self,
        grid: &mut Grid<T, D>,
        work: &mut dyn FnMut(&Grid<T, D>),
    ) -> Result<()> {
        Domain::exchange_with(self, grid, work)
    }

    fn is_rank_face(&self, dim: usize, side: Side) -> bool {
        Domain::is_rank_face(self, dim, side)
    }

    fn local_faces(&self, faces: &[[Boundary<T>; 2]; D]) -> [[Boundary<T>; 2]; D] {
        Domain::local_faces(self, faces)
    }

    fn ghost(&self) -> usize {
        self.layout.ghost
    }

    fn any_rank(&self, local: bool) -> bool {
        let mut any = 0u8;
        self.comm.all_reduce_into(
            &u8::from(local),
            &mut any,
            ::mpi::collective::SystemOperation::max(),
        );
        any != 0
    }

    fn share_tuning(
        &self,
        shape: &[usize],
        choose: &mut dyn FnMut() -> Result<crate::TuneReport>,
    ) -> Result<crate::TuneReport> {
        self.share(shape, choose)
    }
}

impl<const D: usize> Domain<D> {
    /// Runs `choose` on the lowest rank of each group of ranks whose local `shape` is the
    /// same, and gives its CPU schedule to the rest of the group (other schedules are chosen
    /// by every rank). Collective.
    fn share(
        &self,
        shape: &[usize],
        choose: &mut dyn FnMut() -> Result<crate::TuneReport>,
    ) -> Result<crate::TuneReport> {
        let ranks = self.ranks();
        let mine: Vec<u64> = (0..D)
            .map(|d| shape.get(d).copied().unwrap_or(0) as u64)
            .collect();
        let mut all = vec![0u64; D * ranks];
        self.comm.all_gather_into(&mine[..], &mut all[..]);
        let leader = (0..ranks)
            .find(|&r| all[r * D..(r + 1) * D] == mine[..])
            .expect("this rank's own shape is among the gathered ones");
        let group = self
            .comm
            .split_by_color(::mpi::topology::Color::with_value(leader as i32))
            .ok_or_else(|| Error::new(ErrorKind::Backend, "MPI_Comm_split gave no communicator"))?;
        // Rank 0 of the group is its leader (ranks keep their order in a split). It sends
        // its schedule, or word 0 set when its tuning failed (which would otherwise leave
        // the group waiting).
        let root = group.process_at_rank(0);
        let mut code = [0u64; wire::WORDS + 1];
        if group.rank() == 0 {
            let report = choose();
            match &report {
                Ok(r) => code[1..].copy_from_slice(&wire::encode(&r.schedule)),
                Err(_) => code[0] = 1,
            }
            // Non-blocking, as the others' receive is (collectives match only their kind).
            ::mpi::request::scope(|scope| {
                root.immediate_broadcast_into(scope, &mut code[..]).wait();
            });
            return report;
        }
        // The others wait without spinning, so the leader's trials have the machine's other
        // cores as quiet as in a run of one process.
        ::mpi::request::scope(|scope| {
            let mut request = root.immediate_broadcast_into(scope, &mut code[..]);
            loop {
                match request.test() {
                    Ok(_) => break,
                    Err(pending) => {
                        request = pending;
                        std::thread::sleep(std::time::Duration::from_micros(500));
                    }
                }
            }
        });
        if code[0] != 0 {
            return Err(Error::new(
                ErrorKind::Backend,
                format!("tuning failed on rank {leader}, which tunes for this rank"),
            ));
        }
        let code: [u64; wire::WORDS] = std::array::from_fn(|i| code[i + 1]);
        match wire::decode(&code) {
            Some(schedule) => Ok(crate::TuneReport::plain(
                crate::TuningSource::Shared,
                schedule,
                format!("from rank {leader}"),
            )),
            // Not a CPU schedule: this rank chooses its own.
            None => choose(),
        }
    }
}

#[cfg(feature = "output")]
impl<const D: usize> Domain<D> {
    /// Writes the plane `plane` (grid dimension `plane.axis` held at global index
    /// `plane.index`) of the distributed field `grid` to `path` as VTK ImageData of `D - 1`
    /// dimensions, field `name`, in parallel: rank 0 writes the header and sizes the file,
    /// then every rank owning part of the plane writes its values at their offsets. The
    /// file is byte for byte what [`write_vti`](crate::output::write_vti) writes for the
    /// same plane of one global grid (the remaining dimensions in order; the last is VTK's
    /// x). Every rank must see `path` (a shared file system across machines). Collective.
    ///
    /// # Errors
    /// - [`ErrorKind::BadArgument`]: `plane.axis` not below `D`, `plane.index` not below the
    ///   global extent, an empty name, a 1-D or more than 4-D domain, origin or spacing as
    ///   [`write_vti`](crate::output::write_vti) refuses them; as
    ///   [`exchange`](Self::exchange) for a grid that is not a local grid of the domain.
    /// - [`ErrorKind::Io`] on every rank when any rank could not create or write the file.
    pub fn write_plane_vti<T: MpiElement>(
        &self,
        path: impl AsRef<std::path::Path>,
        name: &str,
        grid: &Grid<T, D>,
        plane: crate::output::Plane,
        options: &crate::output::VtiOptions,
    ) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let path = path.as_ref();
        self.check_grid(grid)?;
        let shape = self.shape();
        if !(2..=4).contains(&D) || plane.axis >= D || plane.index >= shape[plane.axis] {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!(
                    "plane {plane:?} of a {D}-D interior of shape {shape:?} (planes of 2-D to \
                     4-D grids, axis below {D}, index below the extent)"
                ),
            ));
        }
        if name.trim().is_empty() {
            return Err(Error::new(ErrorKind::BadArgument, "a field has no name"));
        }
        let dims: Vec<usize> = (0..D).filter(|&d| d != plane.axis).collect();
        let plane_shape: Vec<usize> = dims.iter().map(|&d| shape[d]).collect();
        // The same checks as `write_vti` on origin and spacing.
        let probe = Grid::<T, 1>::with_halo([1], 0)?;
        crate::output::vti::check::<T, 1>(&[(name, &probe)], options)?;
        let header = crate::output::vti::header_of::<T>(&[name], options, &plane_shape);
        let size = T::ELEM.size_bytes();
        let n_points: usize = plane_shape.iter().product();
        let data_start = (header.len() + 1 + 8) as u64;
        let io = |e: std::io::Error| Error::new(ErrorKind::Io, format!("{}: {e}", path.display()));
        // Rank 0 creates the file with its header and trailer; the others wait for it.
        let mut created = 1u8;
        if self.rank == 0 {
            let made = (|| -> std::io::Result<()> {
                let file = std::fs::File::create(path)?;
                let mut head = header.clone().into_bytes();
                head.push(b'_');
                head.extend_from_slice(&((n_points * size) as u64).to_le_bytes());
                file.write_all_at(&head, 0)?;
                let end = data_start + (n_points * size) as u64;
                file.write_all_at(crate::output::vti::TRAILER, end)?;
                Ok(())
            })();
            if made.is_err() {
                created = 0;
            }
            self.comm.process_at_rank(0).broadcast_into(&mut created);
            made.map_err(io)?;
        } else {
            self.comm.process_at_rank(0).broadcast_into(&mut created);
            if created == 0 {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("{}: rank 0 could not create the file", path.display()),
                ));
            }
        }
        // This rank's part of the plane: rows along the plane's last dimension.
        let (lo, hi) = self.owned();
        let origin = self.local_origin();
        let mut written = Ok(());
        if (lo[plane.axis]..hi[plane.axis]).contains(&plane.index) {
            written = (|| -> std::io::Result<()> {
                let file = std::fs::OpenOptions::new().write(true).open(path)?;
                let mut plo = lo;
                let mut phi = hi;
                (plo[plane.axis], phi[plane.axis]) = (plane.index, plane.index + 1);
                let x = *dims.last().expect("D >= 2");
                let mut bytes = Vec::new();
                let mut p = plo;
                loop {
                    // One row along dimension `x` from `p`.
                    bytes.clear();
                    for c in plo[x]..phi[x] {
                        let mut q = p;
                        q[x] = c;
                        let local: [isize; D] = std::array::from_fn(|d| q[d] as isize - origin[d]);
                        let v = grid.as_slice()[grid.geometry().index(&local)];
                        match T::ELEM {
                            stencil_core::ElemType::F32 => {
                                bytes.extend_from_slice(&(v.to_f64() as f32).to_le_bytes())
                            }
                            stencil_core::ElemType::F64 => {
                                bytes.extend_from_slice(&v.to_f64().to_le_bytes())
                            }
                        }
                    }
                    let linear = dims.iter().fold(0usize, |acc, &d| acc * shape[d] + p[d]);
                    file.write_all_at(&bytes, data_start + (linear * size) as u64)?;
                    // Next row: advance the plane's dimensions other than `x`.
                    let mut k = dims.len() - 1;
                    loop {
                        if k == 0 {
                            return Ok(());
                        }
                        k -= 1;
                        let d = dims[k];
                        p[d] += 1;
                        if p[d] < phi[d] {
                            break;
                        }
                        p[d] = plo[d];
                    }
                }
            })();
        }
        let mine = u8::from(written.is_err());
        let mut any = 0u8;
        self.comm
            .all_reduce_into(&mine, &mut any, ::mpi::collective::SystemOperation::max());
        written.map_err(io)?;
        if any != 0 {
            return Err(Error::new(
                ErrorKind::Io,
                format!("{}: another rank could not write its part", path.display()),
            ));
        }
        Ok(())
    }
}
