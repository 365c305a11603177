//! What each rank's grid holds beyond the box it owns, and where every such point gets its
//! value from: the *fill plan* of a halo exchange.
//!
//! A rank's local grid covers its owned box, widened by the ghost depth on every *rank face*
//! (a face with a neighbouring rank behind it, periodic wrap included), plus the grid's halo.
//! Every local point outside the owned box is a *fill point*. Its value is what the same
//! global position holds in one grid over the whole interior with the same boundary
//! conditions, after `update_halo` ([`stencil_core::grid::fill_halo`]): a global interior
//! point is copied from the rank that owns it; a global halo point is resolved by the fill's
//! rule (the last dimension in which it lies outside decides: a `Dirichlet` face gives its
//! value, `UserManaged` leaves the point alone, a copying face maps the coordinate into the
//! interior and the rule applies again). So a rank's halo holds, bit for bit, what a
//! single-process grid's halo and interior hold at those positions.
//!
//! Pure arithmetic, no MPI: the plan is built and tested without an MPI library; the MPI
//! module moves the values. [`Plan`] is what a rank keeps of it per set of face kinds: the
//! runs it sends to and receives from each peer, its own copies and its Dirichlet values.

use stencil_core::grid::{Boundary, HaloSource, Side};
use stencil_core::{Element, Error, ErrorKind, Result};

use super::decomp::Decomposition;

/// The kind of a face's condition, without its value: what a fill plan depends on.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum FaceKind {
    Dirichlet,
    Periodic,
    ZeroGradient,
    Reflect,
    UserManaged,
}

impl FaceKind {
    pub(crate) fn of<T: Element>(b: &Boundary<T>) -> FaceKind {
        match b {
            Boundary::Dirichlet(_) => FaceKind::Dirichlet,
            Boundary::Periodic => FaceKind::Periodic,
            Boundary::ZeroGradient => FaceKind::ZeroGradient,
            Boundary::Reflect => FaceKind::Reflect,
            Boundary::UserManaged => FaceKind::UserManaged,
        }
    }

    /// A condition of this kind (a Dirichlet value plays no part in where values come from).
    fn boundary(self) -> Boundary<f64> {
        match self {
            FaceKind::Dirichlet => Boundary::Dirichlet(0.0),
            FaceKind::Periodic => Boundary::Periodic,
            FaceKind::ZeroGradient => Boundary::ZeroGradient,
            FaceKind::Reflect => Boundary::Reflect,
            FaceKind::UserManaged => Boundary::UserManaged,
        }
    }
}

/// The face kinds of a grid, per dimension, low side first.
pub(crate) type Faces<const D: usize> = [[FaceKind; 2]; D];

/// The faces of `grid`'s boundary conditions as kinds.
pub(crate) fn face_kinds<T: Element, const D: usize>(faces: &[[Boundary<T>; 2]; D]) -> Faces<D> {
    std::array::from_fn(|d| [FaceKind::of(&faces[d][0]), FaceKind::of(&faces[d][1])])
}

/// How the global interior is laid out over the ranks: the decomposition, the ghost depth
/// on rank faces, the halo width of local grids and which dimensions wrap.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Layout<const D: usize> {
    pub(crate) decomp: Decomposition<D>,
    pub(crate) ghost: usize,
    pub(crate) halo: usize,
    pub(crate) periodic: [bool; D],
}

/// Where a global position gets its value from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Source<const D: usize> {
    /// The global interior point.
    Point([usize; D]),
    /// The value of the `Dirichlet` face (dimension, side).
    Value(usize, Side),
    /// Nothing (a `UserManaged` face).
    Untouched,
}

/// Resolves global position `g` of an interior of `shape` with faces `faces`, per the fill
/// rule of [`stencil_core::grid::fill_halo`].
pub(crate) fn resolve<const D: usize>(
    mut g: [isize; D],
    shape: &[usize; D],
    faces: &Faces<D>,
) -> Source<D> {
    for e in (0..D).rev() {
        let n = shape[e] as isize;
        if (0..n).contains(&g[e]) {
            continue;
        }
        let side = if g[e] < 0 { Side::Low } else { Side::High };
        match faces[e][side.index()].boundary().source(g[e], shape[e]) {
            HaloSource::Value(_) => return Source::Value(e, side),
            HaloSource::Untouched => return Source::Untouched,
            HaloSource::Interior(q) => g[e] = q as isize,
        }
    }
    Source::Point(std::array::from_fn(|d| g[d] as usize))
}

impl<const D: usize> Layout<D> {
    /// Whether face (`d`, `side`) of `rank`'s owned box has a rank behind it (a neighbour, or
    /// the wrap of a periodic dimension cut over several ranks): such faces get a ghost zone
    /// and are filled by exchange, never by the local grid's boundary condition.
    pub(crate) fn rank_face(&self, rank: usize, d: usize, side: Side) -> bool {
        let dims = self.decomp.dims();
        if dims[d] == 1 {
            return false;
        }
        let c = self.decomp.coords(rank)[d];
        let at_edge = match side {
            Side::Low => c == 0,
            Side::High => c + 1 == dims[d],
        };
        self.periodic[d] || !at_edge
    }

    /// The global coordinates of `rank`'s local interior point 0 and the local interior's
    /// extents: the owned box widened by the ghost depth on rank faces.
    pub(crate) fn local_box(&self, rank: usize) -> ([isize; D], [usize; D]) {
        let (lo, hi) = self.decomp.owned(rank);
        let mut start = [0isize; D];
        let mut shape = [0usize; D];
        for d in 0..D {
            let below = if self.rank_face(rank, d, Side::Low) {
                self.ghost
            } else {
                0
            };
            let above = if self.rank_face(rank, d, Side::High) {
                self.ghost
            } else {
                0
            };
            start[d] = lo[d] as isize - below as isize;
            shape[d] = hi[d] - lo[d] + below + above;
        }
        (start, shape)
    }

    /// `rank`'s owned box in its local interior coordinates.
    pub(crate) fn owned_local(&self, rank: usize) -> ([usize; D], [usize; D]) {
        let (lo, hi) = self.decomp.owned(rank);
        let (start, _) = self.local_box(rank);
        (
            std::array::from_fn(|d| (lo[d] as isize - start[d]) as usize),
            std::array::from_fn(|d| (hi[d] as isize - start[d]) as usize),
        )
    }

    /// Checks that grids with faces `faces` can be exchanged on this layout: periodic faces
    /// exactly on the periodic dimensions.
    pub(crate) fn check_faces(&self, faces: &Faces<D>) -> Result<()> {
        for (d, pair) in faces.iter().enumerate() {
            let periodic = pair.iter().filter(|&&k| k == FaceKind::Periodic).count();
            let want = if self.periodic[d] { 2 } else { 0 };
            if periodic != want {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    format!(
                        "dimension {d} of the domain is {}, but the grid's faces there are \
                         {pair:?}: periodic faces must be exactly those of the domain's \
                         periodic dimensions (set them with `Domain::builder(..).periodic(..)`)",
                        if self.periodic[d] {
                            "periodic"
                        } else {
                            "not periodic"
                        }
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The fill plan of `rank` for grids with faces `faces` (checked by
    /// [`check_faces`](Self::check_faces)).
    pub(crate) fn fill_runs(&self, rank: usize, faces: &Faces<D>) -> FillRuns<D> {
        let shape = self.decomp.shape();
        let (start, n) = self.local_box(rank);
        let (own_lo, own_hi) = self.owned_local(rank);
        let h = self.halo as isize;
        let last = D - 1;
        let mut runs = FillRuns {
            copies: Vec::new(),
            values: Vec::new(),
        };
        let mut open: Option<Open<D>> = None;
        // Every row of the local storage (halo included), in C order.
        let mut p = [0isize; D];
        for (d, x) in p.iter_mut().enumerate() {
            *x = if d == last { 0 } else { -h };
        }
        loop {
            let row_owned =
                (0..last).all(|d| (own_lo[d] as isize..own_hi[d] as isize).contains(&p[d]));
            for x in -h..n[last] as isize + h {
                p[last] = x;
                if row_owned && (own_lo[last] as isize..own_hi[last] as isize).contains(&x) {
                    if let Some(o) = open.take() {
                        o.close(&mut runs);
                    }
                    continue;
                }
                let g: [isize; D] = std::array::from_fn(|d| start[d] + p[d]);
                let src = resolve(g, &shape, faces);
                let owner = match src {
                    Source::Point(q) => self.decomp.owner(q),
                    _ => usize::MAX,
                };
                let extends = open.as_mut().is_some_and(|o| o.extend(&src, owner));
                if !extends {
                    if let Some(o) = open.take() {
                        o.close(&mut runs);
                    }
                    open = Some(Open {
                        dst: p,
                        src,
                        owner,
                        len: 1,
                    });
                }
            }
            if let Some(o) = open.take() {
                o.close(&mut runs);
            }
            // Next row.
            let mut d = last;
            loop {
                if d == 0 {
                    // Stable: each owner's runs stay in storage order.
                    runs.copies.sort_by_key(|c| c.owner);
                    for c in &mut runs.copies {
                        // Source coordinates in the owner's local interior.
                        let (o_start, _) = self.local_box(c.owner);
                        for (x, o) in c.src.iter_mut().zip(o_start) {
                            *x -= o;
                        }
                    }
                    return runs;
                }
                d -= 1;
                p[d] += 1;
                if p[d] < n[d] as isize + h {
                    break;
                }
                p[d] = -h;
            }
        }
    }
}

/// A run being built: `len` fill points along the unit-stride dimension from local `dst`.
struct Open<const D: usize> {
    dst: [isize; D],
    src: Source<D>,
    /// The rank owning the source point (for `Source::Point`).
    owner: usize,
    len: usize,
}

impl<const D: usize> Open<D> {
    /// Extends the run by one point whose source is `next`, when it continues the run.
    fn extend(&mut self, next: &Source<D>, owner: usize) -> bool {
        let ok = match (&self.src, next) {
            (Source::Point(a), Source::Point(b)) => {
                let last = D - 1;
                owner == self.owner
                    && (0..last).all(|d| a[d] == b[d])
                    && a[last] + self.len == b[last]
            }
            (Source::Value(d, s), Source::Value(e, t)) => d == e && s == t,
            (Source::Untouched, Source::Untouched) => true,
            _ => false,
        };
        if ok {
            self.len += 1;
        }
        ok
    }

    fn close(self, runs: &mut FillRuns<D>) {
        match self.src {
            Source::Point(q) => runs.copies.push(CopyRun {
                dst: self.dst,
                owner: self.owner,
                src: std::array::from_fn(|d| q[d] as isize),
                len: self.len,
            }),
            Source::Value(d, side) => runs.values.push(ValueRun {
                dst: self.dst,
                len: self.len,
                face: (d, side),
            }),
            Source::Untouched => {}
        }
    }
}

/// A rank's fill plan: runs copied from owners and runs given a face's value.
#[derive(Clone, Debug, Default)]
pub(crate) struct FillRuns<const D: usize> {
    /// Sorted by owner.
    pub(crate) copies: Vec<CopyRun<D>>,
    pub(crate) values: Vec<ValueRun<D>>,
}

/// `len` points from local coordinates `dst`, copied from the owner's local coordinates `src`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct CopyRun<const D: usize> {
    pub(crate) dst: [isize; D],
    pub(crate) owner: usize,
    pub(crate) src: [isize; D],
    pub(crate) len: usize,
}

/// `len` points from local coordinates `dst` given the value of Dirichlet face `face`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct ValueRun<const D: usize> {
    pub(crate) dst: [isize; D],
    pub(crate) len: usize,
    pub(crate) face: (usize, Side),
}

/// The exchange plan of this rank for grids of one set of face kinds.
pub(crate) struct Plan<const D: usize> {
    /// Per peer: the runs received from it, in the order it sends them (local destination,
    /// length) and their total length.
    pub(super) recv: Vec<Peer<D>>,
    /// Per peer: the runs sent to it (local source, length).
    pub(super) send: Vec<Peer<D>>,
    /// Copies within this rank (destination, source, length), of points beyond a rank face
    /// (the grid's own fill gives the others).
    pub(super) local: Vec<([isize; D], [isize; D], usize)>,
    /// Runs given a Dirichlet face's value, beyond a rank face.
    pub(super) values: Vec<ValueRun<D>>,
    /// Whether the grid's own fill (rank faces left alone) gives the other points; false
    /// where it cannot (a `Reflect` face of a cut dimension whose local extent is not wider
    /// than the halo), and then `local` and `values` hold every such point.
    pub(super) own_fill: bool,
}

/// One peer of a plan: its rank and the runs exchanged with it.
pub(crate) struct Peer<const D: usize> {
    pub(super) rank: usize,
    pub(super) runs: Vec<([isize; D], usize)>,
    pub(super) points: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use stencil_core::grid::Grid;

    /// Every local grid of every rank, filled from the ranks' owned boxes by the fill plans,
    /// equals one global grid with the same faces (halo filled) at every position the plan
    /// fills: the plan is checked against `update_halo` itself, on random values.
    fn check<const D: usize>(
        shape: [usize; D],
        dims: [usize; D],
        ghost: usize,
        halo: usize,
        faces: [[Boundary<f64>; 2]; D],
    ) {
        let periodic = std::array::from_fn(|d| faces[d][0] == Boundary::Periodic);
        let layout = Layout {
            decomp: Decomposition::with_dims(shape, dims, ghost.max(halo)).unwrap(),
            ghost,
            halo,
            periodic,
        };
        let kinds = face_kinds(&faces);
        layout.check_faces(&kinds).unwrap();
        let reach = ghost + halo;
        let mut global = Grid::<f64, D>::with_halo(shape, reach).unwrap();
        let mut rng = stencil_core::rng::Rng::new(0x9e37_79b9_7f4a_7c15);
        global.fill_with(|_| rng.next_f64());
        for (d, pair) in faces.iter().enumerate() {
            for (side, &b) in Side::BOTH.iter().zip(pair) {
                global.set_face_boundary(d, *side, b).unwrap();
            }
        }
        global.update_halo();
        let ranks = layout.decomp.ranks();
        let poison = f64::from_bits(0x7ff8_dead_beef_0001);
        let mut locals: Vec<Grid<f64, D>> = (0..ranks)
            .map(|r| {
                let (start, n) = layout.local_box(r);
                let (lo, hi) = layout.owned_local(r);
                let mut g = Grid::<f64, D>::with_halo(n, halo).unwrap();
                g.as_mut_slice().fill(poison);
                g.fill_with(|p| {
                    if (0..D).all(|d| (lo[d]..hi[d]).contains(&p[d])) {
                        global[std::array::from_fn(|d| (start[d] + p[d] as isize) as usize)]
                    } else {
                        poison
                    }
                });
                g
            })
            .collect();
        let before: Vec<Grid<f64, D>> = locals.iter().map(|g| g.repadded(0).unwrap()).collect();
        for (r, local) in locals.iter_mut().enumerate() {
            let runs = layout.fill_runs(r, &kinds);
            for c in &runs.copies {
                let src = &before[c.owner];
                let from = src.geometry().index(&c.src);
                let values = src.as_slice()[from..from + c.len].to_vec();
                let at = local.geometry().index(&c.dst);
                local.as_mut_slice()[at..at + c.len].copy_from_slice(&values);
            }
            for v in &runs.values {
                let Boundary::Dirichlet(value) = faces[v.face.0][v.face.1.index()] else {
                    panic!("value run from a face that is not Dirichlet");
                };
                let at = local.geometry().index(&v.dst);
                local.as_mut_slice()[at..at + v.len].fill(value);
            }
            let (start, n) = layout.local_box(r);
            let h = halo as isize;
            let mut p = [0isize; D];
            let total: usize = n.iter().map(|&x| x + 2 * halo).product();
            for flat in 0..total {
                let mut rest = flat;
                for d in (0..D).rev() {
                    let w = n[d] + 2 * halo;
                    p[d] = (rest % w) as isize - h;
                    rest /= w;
                }
                let g: [isize; D] = std::array::from_fn(|d| start[d] + p[d]);
                if resolve(g, &shape, &kinds) == Source::Untouched {
                    continue;
                }
                let got = local.get(p).unwrap();
                let want = global.get(g).unwrap();
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "rank {r} of {dims:?}, local {p:?} (global {g:?}), faces {faces:?}"
                );
            }
        }
    }

    #[test]
    fn fill_plans_reproduce_the_single_grid_halo() {
        use Boundary::*;
        let conditions = [Dirichlet(0.5), ZeroGradient, Reflect, UserManaged];
        for &a in &conditions {
            for &b in &conditions {
                for (ghost, halo) in [(0, 1), (0, 3), (2, 1), (4, 2), (3, 4)] {
                    check([13, 11], [3, 2], ghost, halo, [[a, b], [b, a]]);
                    check([9, 12], [1, 3], ghost, halo, [[Periodic; 2], [a, b]]);
                    check([12, 10], [2, 2], ghost, halo, [[a, b], [Periodic; 2]]);
                }
            }
        }
        for (ghost, halo) in [(0, 2), (2, 1), (4, 4)] {
            check([12, 9, 10], [2, 1, 2], ghost, halo, [[Periodic; 2]; 3]);
            check(
                [9, 8, 11],
                [2, 2, 1],
                ghost,
                halo,
                [[Dirichlet(2.0), Reflect]; 3],
            );
            check(
                [8, 10, 9],
                [1, 2, 2],
                ghost,
                halo,
                [[ZeroGradient; 2], [Periodic; 2], [Reflect, Dirichlet(-1.0)]],
            );
        }
        check([17], [4], 4, 4, [[Periodic; 2]]);
        check([17], [3], 2, 3, [[Reflect, Dirichlet(1.0)]]);
    }

    #[test]
    fn resolution_follows_the_last_outside_dimension() {
        use FaceKind::*;
        let faces = [[Dirichlet, Periodic], [ZeroGradient, Reflect]];
        // Outside in dimension 1 only: zero gradient maps to 0.
        assert_eq!(resolve([2, -3], &[5, 6], &faces), Source::Point([2, 0]));
        // Outside in both: dimension 1 (reflect) first, then dimension 0 (Dirichlet).
        assert_eq!(
            resolve([-1, 7], &[5, 6], &faces),
            Source::Value(0, Side::Low)
        );
        assert_eq!(resolve([6, 7], &[5, 6], &faces), Source::Point([1, 3]));
        let user = [[UserManaged, UserManaged], [Periodic, Periodic]];
        assert_eq!(resolve([-1, 2], &[5, 6], &user), Source::Untouched);
    }
}
