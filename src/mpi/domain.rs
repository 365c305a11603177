//! [`Domain`], one rank's view of the distributed interior, and [`DomainBuilder`], which cuts
//! the interior over the ranks and gives each rank its share of the machine's cores.

use std::sync::{Arc, Mutex};

use ::mpi::collective::{CommunicatorCollectives, Root};
use ::mpi::topology::{CartesianCommunicator, Communicator, SimpleCommunicator};

use stencil_core::grid::{Boundary, Grid, Side};
use stencil_core::{Element, Error, ErrorKind, Result};

use super::plan::{Faces, Layout, Plan, face_kinds};
use super::stats::ExchangeStats;
use super::{Decomposition, MpiElement, for_each_row};

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

/// One rank's view of a global interior cut over the ranks of a communicator: its box, the
/// local grids' layout, and the halo exchange. See the [module documentation](super).
pub struct Domain<const D: usize> {
    pub(crate) comm: CartesianCommunicator,
    pub(crate) layout: Layout<D>,
    pub(crate) rank: usize,
    /// Ranks of the communicator on this machine (this one included).
    pub(crate) node_ranks: usize,
    /// Exchange plans, one per set of face kinds met so far.
    pub(crate) plans: Mutex<Vec<(Faces<D>, Arc<Plan<D>>)>>,
    pub(crate) stats: Mutex<ExchangeStats>,
    /// The last exchange's buffers (the exchange's `Buffers` of its element type).
    pub(crate) buffers: Mutex<Option<Box<dyn std::any::Any + Send>>>,
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

    /// Checks that `grid` is a local grid of this domain.
    pub(crate) fn check_grid<T: Element>(&self, grid: &Grid<T, D>) -> Result<()> {
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
