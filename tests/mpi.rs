//! Grids distributed over MPI ranks give the single-process result bit for bit (feature
//! `mpi`; run under `mpirun`, see `.ci/run`):
//!
//! ```text
//! cargo test --features mpi --test mpi --no-run   # prints the binary's path
//! mpirun --allow-run-as-root --oversubscribe -np 4 target/debug/deps/mpi-<hash>
//! ```
//!
//! Every rank runs every case: 2-D and 3-D kernels of radius 1 to 4 (from text, with a
//! coefficient grid and corner reads, and one from `stencil!`), every boundary condition,
//! periodic dimensions, odd shapes that no process grid divides, every process grid of the
//! rank count, ghost depths of 0 (an exchange per step), the radius, and twice it (two steps
//! per exchange), time loops and single sweeps. Every rank computes each case in one process
//! on random data (with the caller's values beyond `UserManaged` faces) and compares its own
//! local grids with it bit for bit, as docs/guide.md states the result: the owned box and the halo
//! beyond global faces after the call, every local point after an exchange; rank 0 also
//! compares the gathered grids. Cases that the layout cannot hold must fail with the
//! documented error on every rank. Then: scatter's errors on every rank, a callback that
//! stops the loop on one rank, the ranks' pools on disjoint cores (printed). With
//! `STENCIL_MPI_TEST_ABORT=1` the last rank fails alone and must abort the job.

use stencil::mpi::{Decomposition, Domain};
use stencil::output::{Plane, VtiOptions, write_vti_to};
use stencil::prelude::*;
use stencil::{
    CpuSchedule, ErrorKind, Launch, Receivers, Schedule, Sources, Stage, Stages, Stencil, Steps,
};

stencil! {
    /// The 7-point heat step, from the macro (generated loop).
    #[rotate(out -> u)]
    fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
        out[i, j, k] = c0 * u[i, j, k]
            + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k]
                  + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
    }

    /// Velocities (`vx` half a cell along `i`, `vy` along `j`) from the pressure gradient.
    fn velocity2(p: &Grid2<f64>, vx: &Grid2<f64>, vy: &Grid2<f64>, b: &Grid2<f64>,
                 vx_next: &mut Grid2<f64>, vy_next: &mut Grid2<f64>, dt: f64) {
        vx_next[i, j] = vx[i, j] + dt * b[i, j] * (p[i+1, j] - p[i, j]);
        vy_next[i, j] = vy[i, j] + dt * b[i, j] * (p[i, j+1] - p[i, j]);
    }

    /// Pressure from the divergence of the velocities.
    fn pressure2(p: &Grid2<f64>, vx: &Grid2<f64>, vy: &Grid2<f64>, k: &Grid2<f64>,
                 p_next: &mut Grid2<f64>, dt: f64) {
        p_next[i, j] = p[i, j] + dt * k[i, j] * (vx[i, j] - vx[i-1, j] + vy[i, j] - vy[i, j-1]);
    }

    /// A term that depends on the point's row: refused across ranks, where each rank would
    /// see its own box's indices.
    fn by_row(u: &Grid2<f64>, out: &mut Grid2<f64>) {
        out[i, j] = u[i, j] + 0.5 * i;
    }

    /// A Laplacian of `u` into a temporary, reaching two points along `i`.
    fn lap2(u: &Grid2<f64>, l: &mut Grid2<f64>) {
        l[i, j] = u[i-2, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4.0 * u[i, j];
    }

    /// A leapfrog step from the temporary: three time levels.
    fn leap2(u: &Grid2<f64>, u_prev: &Grid2<f64>, l: &Grid2<f64>, u_next: &mut Grid2<f64>,
             c: f64) {
        u_next[i, j] = 2.0 * u[i, j] - u_prev[i, j] + c * (l[i, j] + 0.5 * l[i+1, j-1]);
    }
}

/// A kernel of radius `r` in `dims` dimensions: axis reads at distance `r`, a corner read at
/// distance `r` in every dimension, and a coefficient grid read at offsets.
fn kernel_text(dims: usize, r: usize) -> String {
    let idx = ["i", "j", "k"];
    let at = |offs: &[isize]| -> String {
        (0..dims)
            .map(|d| match offs[d] {
                0 => idx[d].to_string(),
                o if o > 0 => format!("{}+{o}", idx[d]),
                o => format!("{}{o}", idx[d]),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let r = r as isize;
    let mut axis = Vec::new();
    for d in 0..dims {
        for s in [-r, r] {
            let mut o = vec![0; dims];
            o[d] = s;
            axis.push(format!("u[{}]", at(&o)));
        }
    }
    let corner: Vec<isize> = (0..dims).map(|d| if d % 2 == 0 { -r } else { r }).collect();
    let near: Vec<isize> = (0..dims).map(|d| if d % 2 == 0 { 1 } else { -1 }).collect();
    let zero = vec![0; dims];
    let ty = format!("Grid{dims}<f64>");
    format!(
        "fn step(u: &{ty}, c: &{ty}, out: &mut {ty}, a: f64) {{
            out[{z}] = a * u[{z}] + 0.1 * ({axis}) + 0.05 * u[{corner}] * c[{near}]
                - 0.02 * c[{z}] * u[{near}];
        }}",
        z = at(&zero),
        axis = axis.join(" + "),
        corner = at(&corner),
        near = at(&near),
    )
}

/// A value of global point `p` of field `seed`: random-looking, never zero.
fn value<const D: usize>(seed: u64, p: [usize; D]) -> f64 {
    value_at(seed, p.map(|c| c as isize))
}

/// [`value`] at any global position, halo included (`value_at(s, p)` is `value(s, p)` for
/// a point of the interior).
fn value_at<const D: usize>(seed: u64, p: [isize; D]) -> f64 {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &c in &p {
        x = (x ^ c as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x ^= x >> 31;
    }
    0.25 + (x >> 11) as f64 / (1u64 << 53) as f64
}

/// Every process grid of `ranks` ranks in `D` dimensions.
fn process_grids<const D: usize>(ranks: usize) -> Vec<[usize; D]> {
    let mut out = Vec::new();
    let mut dims = [1usize; D];
    fn rec<const D: usize>(
        rest: usize,
        d: usize,
        dims: &mut [usize; D],
        out: &mut Vec<[usize; D]>,
    ) {
        if d + 1 == D {
            dims[d] = rest;
            out.push(*dims);
            return;
        }
        for p in (1..=rest).filter(|p| rest.is_multiple_of(*p)) {
            dims[d] = p;
            rec(rest / p, d + 1, dims, out);
        }
    }
    rec(ranks, 0, &mut dims, &mut out);
    out
}

struct Case<const D: usize> {
    shape: [usize; D],
    dims: [usize; D],
    radius: usize,
    ghost: usize,
    faces: [[Boundary<f64>; 2]; D],
    steps: usize,
}

impl<const D: usize> Case<D> {
    fn periodic(&self) -> [bool; D] {
        std::array::from_fn(|d| self.faces[d][0] == Boundary::Periodic)
    }

    fn describe(&self) -> String {
        format!(
            "shape {:?} over {:?}, radius {}, ghost {}, faces {:?}, {} steps",
            self.shape, self.dims, self.radius, self.ghost, self.faces, self.steps
        )
    }
}

fn set_faces<const D: usize>(grid: &mut Grid<f64, D>, faces: &[[Boundary<f64>; 2]; D]) {
    for (d, pair) in faces.iter().enumerate() {
        for (side, &b) in [Side::Low, Side::High].into_iter().zip(pair) {
            grid.set_face_boundary(d, side, b).unwrap();
        }
    }
}

/// Every point of `grid`'s storage, interior and halo, in C order.
fn points<const D: usize>(grid: &Grid<f64, D>) -> impl Iterator<Item = [isize; D]> + use<D> {
    let (n, h) = (grid.shape(), grid.halo());
    let total: usize = n.iter().map(|&x| x + 2 * h).product();
    (0..total).map(move |flat| {
        let mut rest = flat;
        let mut p = [0isize; D];
        for d in (0..D).rev() {
            let w = n[d] + 2 * h;
            p[d] = (rest % w) as isize - h as isize;
            rest /= w;
        }
        p
    })
}

/// Every point of `grid`, interior and halo, as bits.
fn bits<const D: usize>(grid: &Grid<f64, D>) -> Vec<u64> {
    points(grid)
        .map(|p| grid.get(p).unwrap().to_bits())
        .collect()
}

/// Gives every point of `grid` beyond a face of the global interior that does not wrap
/// (global position `origin + p` outside `0..shape` along a dimension that is not
/// `periodic`) the caller's value `value_at(seed, ..)` of its global position, as a caller
/// does beyond `UserManaged` faces (the grid's fill overwrites the other faces' points).
fn set_caller_values<const D: usize>(
    grid: &mut Grid<f64, D>,
    origin: [isize; D],
    shape: [usize; D],
    periodic: [bool; D],
    seed: u64,
) {
    for p in points(grid).collect::<Vec<_>>() {
        let g: [isize; D] = std::array::from_fn(|d| origin[d] + p[d]);
        if (0..D).any(|d| !periodic[d] && !(0..shape[d] as isize).contains(&g[d])) {
            grid.set(p, value_at(seed, g)).unwrap();
        }
    }
}

/// One process's grid for a case: halo `halo`, the case's faces, interior `value(seed, ..)`,
/// the caller's values `value_at(seed + 10, ..)` beyond its faces, halo filled.
fn one_grid<const D: usize>(case: &Case<D>, halo: usize, seed: u64) -> Grid<f64, D> {
    let mut grid = Grid::<f64, D>::with_halo(case.shape, halo).unwrap();
    set_faces(&mut grid, &case.faces);
    set_caller_values(&mut grid, [0; D], case.shape, case.periodic(), seed + 10);
    grid.fill_with(|p| value(seed, p));
    grid
}

/// Where one process's grid (halo `halo`, the case's faces) gets each halo value from, as
/// a grid of markers: a NaN whose payload is `1 +` the storage index of the position whose
/// caller's value it holds, where that is a caller's value (beyond a `UserManaged` face,
/// or at a corner that a copying face fills from beyond one); otherwise no marker.
fn caller_sources<const D: usize>(case: &Case<D>, halo: usize) -> Grid<f64, D> {
    let mut grid = Grid::<f64, D>::with_halo(case.shape, halo).unwrap();
    set_faces(&mut grid, &case.faces);
    for p in points(&grid).collect::<Vec<_>>() {
        let marker = f64::from_bits(MARKER | (grid.geometry().index(&p) as u64 + 1));
        grid.set(p, marker).unwrap();
    }
    grid.fill_with(|_| 0.0);
    grid
}

/// The bits of a [`caller_sources`] marker (a NaN payload below 2^32).
const MARKER: u64 = 0x7ff8_0000_0000_0000;

/// One process's run of a case, which each rank's local grids are compared with.
struct OneProcess<'a, const D: usize> {
    /// One process's grid (a halo wide enough for every local point's global position).
    grid: &'a Grid<f64, D>,
    /// [`caller_sources`] of grids of that halo.
    sources: &'a Grid<f64, D>,
    /// The caller's values beyond the faces are `value_at(caller, ..)`, on every rank and in
    /// one process alike.
    caller: u64,
}

/// Checks the points of this rank's `local` grid that a sweep or time loop across ranks
/// leaves as one process does, bit for bit against one process's grid at the same global
/// positions: the owned box, and the halo beyond the faces of the global interior next to
/// it (beyond a `UserManaged` face, what the caller put there). With `everywhere` (after an
/// exchange), every local point: ghost zones and halos beyond rank faces too. A corner that
/// one process fills by copying the caller's value of another position (a copying face
/// meeting a `UserManaged` face) holds that copy or, where nothing writes it on this rank,
/// the caller's value of its own position.
fn check_local<const D: usize>(
    domain: &Domain<D>,
    local: &Grid<f64, D>,
    one: &OneProcess<'_, D>,
    everywhere: bool,
    what: &str,
) {
    let (lo, hi) = domain.owned_local();
    let origin = domain.local_origin();
    // Along each dimension: in the owned range, or beyond a face without a rank behind it.
    let exact = |p: &[isize; D]| {
        (0..D).all(|d| {
            (lo[d] as isize..hi[d] as isize).contains(&p[d])
                || (p[d] < lo[d] as isize && !domain.is_rank_face(d, Side::Low))
                || (p[d] >= hi[d] as isize && !domain.is_rank_face(d, Side::High))
        })
    };
    // The documented exception: with no ghost zone, a `Reflect` face of a dimension cut over
    // ranks mirrors a neighbour's points into the halo when this rank's part is no wider
    // than the halo (the grids' own fill reads them beyond the rank face).
    let shape = domain.shape();
    let (own_lo, own_hi) = domain.owned();
    let cut = domain.decomposition().dims();
    let faces = one.grid.boundaries();
    let mirrors_a_neighbour = |g: &[isize; D]| {
        domain.ghost() == 0
            && (0..D).any(|d| {
                let n = shape[d] as isize;
                let mirror = match (g[d], faces[d]) {
                    (x, [Boundary::Reflect, _]) if x < 0 => -x,
                    (x, [_, Boundary::Reflect]) if x >= n => 2 * (n - 1) - x,
                    _ => return false,
                };
                cut[d] > 1 && !(own_lo[d] as isize..own_hi[d] as isize).contains(&mirror)
            })
    };
    let mut checked = 0;
    for p in points(local).filter(|p| everywhere || exact(p)) {
        let g: [isize; D] = std::array::from_fn(|d| origin[d] + p[d]);
        if !everywhere && mirrors_a_neighbour(&g) {
            continue;
        }
        let want = one
            .grid
            .get(g)
            .unwrap_or_else(|| panic!("{what}: global {g:?} is outside one process's grid"));
        let got = local.get(p).unwrap();
        let source = one.sources.get(g).unwrap().to_bits();
        let own_index = one.sources.geometry().index(&g) as u64 + 1;
        let copied_corner = source & !0xffff_ffff == MARKER && source != MARKER | own_index;
        let own = value_at(one.caller, g);
        assert!(
            got.to_bits() == want.to_bits() || (copied_corner && got.to_bits() == own.to_bits()),
            "{what}: rank {} local {p:?} (global {g:?}) holds {got}, one process {want}",
            domain.rank()
        );
        checked += 1;
    }
    assert!(checked > 0, "{what}: no point checked");
}

/// Runs one case on every rank: a time loop and a single sweep across ranks, compared on
/// rank 0 with one process. Returns whether it ran (false: the layout refused it, as it
/// must).
fn run_case<const D: usize>(
    world: &impl stencil::mpi::bindings::traits::Communicator,
    case: &Case<D>,
) -> bool {
    let stencil: Stencil<f64> = stencil::parse(&kernel_text(D, case.radius)).unwrap();
    let built = Domain::<D>::builder(case.shape)
        .halo(case.radius)
        .ghost(case.ghost)
        .periodic(case.periodic())
        .process_grid(case.dims)
        .build(world);
    let fits = Decomposition::with_dims(case.shape, case.dims, case.radius.max(case.ghost)).is_ok();
    let domain = match built {
        Ok(d) => {
            assert!(
                fits,
                "a layout that cannot hold the halo was accepted: {}",
                case.describe()
            );
            d
        }
        Err(e) => {
            assert!(!fits, "{}: {e}", case.describe());
            assert_eq!(e.kind(), ErrorKind::InvalidShape, "{}", case.describe());
            return false;
        }
    };
    let origin = domain.local_origin();
    let periodic = case.periodic();
    // Local grids as one process's: interior values of their global positions, and the
    // caller's values beyond the faces (kept beyond `UserManaged` faces).
    let local = |seed: u64| {
        let mut grid = domain.grid::<f64>().unwrap();
        set_faces(&mut grid, &case.faces);
        set_caller_values(&mut grid, origin, case.shape, periodic, seed + 10);
        domain.fill_with(&mut grid, |p| value(seed, p)).unwrap();
        grid
    };
    let mut u = local(1);
    let c = local(2);
    let mut out = local(3);
    // Poisoned (a grid's own `fill_with` would refill its halo as if rank faces were global).
    domain.fill_with(&mut out, |_| f64::NAN).unwrap();
    // One process, on grids whose halo holds every rank's local points (ghost zones and
    // halo) at their global positions.
    let halo = case.radius + case.ghost;
    let mut gu = one_grid(case, halo, 1);
    let gc = one_grid(case, halo, 2);
    let mut gout = one_grid(case, halo, 3);
    gout.fill_with(|_| f64::NAN);
    let sources = caller_sources(case, halo);
    fn one<'a, const D: usize>(
        grid: &'a Grid<f64, D>,
        sources: &'a Grid<f64, D>,
        caller: u64,
    ) -> OneProcess<'a, D> {
        OneProcess {
            grid,
            sources,
            caller,
        }
    }

    // The exchange's contract: every local point, ghost zones and halo included, holds what
    // one global grid with the same faces holds there after `update_halo`, whatever it held
    // before (every point outside the owned box is poisoned first, except the caller's
    // points beyond `UserManaged` faces, which no exchange writes).
    {
        let (own_lo, own_hi) = domain.owned_local();
        let callers = |p: &[isize; D]| {
            (0..D).any(|d| {
                let g = origin[d] + p[d];
                !periodic[d] && !(0..case.shape[d] as isize).contains(&g)
            }) && (0..D).any(|d| case.faces[d].contains(&Boundary::UserManaged))
        };
        for p in points(&u).collect::<Vec<_>>() {
            let owned = (0..D).all(|d| (own_lo[d] as isize..own_hi[d] as isize).contains(&p[d]));
            if !owned && !callers(&p) {
                u.set(p, f64::from_bits(0x7ff8_0000_dead_beef)).unwrap();
            }
        }
        domain.exchange(&mut u).unwrap();
        check_local(
            &domain,
            &u,
            &one(&gu, &sources, 11),
            true,
            &format!("exchange: {}", case.describe()),
        );
    }

    // A single sweep across ranks: exchange, then run on the local grid. The owned box and
    // the halo beyond global faces are one process's; rank faces' halos are not (the grid's
    // own fill treats them as global faces).
    let mut swept = out.like();
    domain.exchange(&mut u).unwrap();
    Launch::new(&stencil)
        .input("u", &u)
        .input("c", &c)
        .output("out", &mut swept)
        .param("a", 0.3)
        .run()
        .unwrap();
    let mut gswept = gout.like();
    Launch::new(&stencil)
        .input("u", &gu)
        .input("c", &gc)
        .output("out", &mut gswept)
        .param("a", 0.3)
        .run()
        .unwrap();
    check_local(
        &domain,
        &swept,
        &one(&gswept, &sources, 13),
        false,
        &format!("sweep across ranks: {}", case.describe()),
    );

    let report = Steps::new(&stencil)
        .rotate(&["out", "u"])
        .grid("u", &mut u)
        .grid("out", &mut out)
        .input("c", &c)
        .param("a", 0.3)
        .without_tuning_cache()
        .across(&domain)
        .run(case.steps)
        .unwrap();
    assert_eq!(report.steps, case.steps);
    Steps::new(&stencil)
        .rotate(&["out", "u"])
        .grid("u", &mut gu)
        .grid("out", &mut gout)
        .input("c", &gc)
        .param("a", 0.3)
        .without_tuning_cache()
        .run(case.steps)
        .unwrap();
    // What docs/guide.md promises: each rank's local grids, interior and halo, are one process's
    // where the loop leaves them final (owned box, halo beyond global faces, the caller's
    // points beyond `UserManaged` faces), and everywhere once exchanged.
    // After an odd number of steps `u` holds the storage `out` started with, and with it
    // the caller's values.
    let (u_caller, out_caller) = if case.steps.is_multiple_of(2) {
        (11, 13)
    } else {
        (13, 11)
    };
    for (name, local, one) in [
        ("u", &mut u, one(&gu, &sources, u_caller)),
        ("out", &mut out, one(&gout, &sources, out_caller)),
    ] {
        let what = format!("time loop across ranks, `{name}`: {}", case.describe());
        check_local(&domain, local, &one, false, &what);
        let whole = domain.gather(local).unwrap();
        if let Some(whole) = whole {
            // `gather` gives the whole grid, its halo filled (beyond `UserManaged` faces it
            // holds no caller's values: it is not compared there).
            let n = whole.shape();
            let user_managed = case
                .faces
                .iter()
                .flatten()
                .any(|b| *b == Boundary::UserManaged);
            let interior = |p: &[isize; D]| (0..D).all(|d| (0..n[d] as isize).contains(&p[d]));
            for p in points(&whole).filter(|p| !user_managed || interior(p)) {
                let (got, want) = (whole.get(p).unwrap(), one.grid.get(p).unwrap());
                assert!(
                    got.to_bits() == want.to_bits(),
                    "gathered at {p:?}: {got} against {want}: {what}"
                );
            }
        }
        domain.exchange(local).unwrap();
        check_local(&domain, local, &one, true, &format!("exchanged, {what}"));
    }
    true
}

/// The macro's kernel (generated loop), stepped across ranks against one process.
fn macro_kernel(world: &impl stencil::mpi::bindings::traits::Communicator, ghost: usize) {
    let shape = [19, 14, 17];
    let domain = Domain::<3>::builder(shape)
        .ghost(ghost)
        .build(world)
        .unwrap();
    let mut u = domain.grid::<f64>().unwrap();
    u.set_boundary(Boundary::ZeroGradient);
    domain.fill_with(&mut u, |p| value(3, p)).unwrap();
    let mut v = u.like();
    domain.reset_stats();
    heat::steps(&mut u, &mut v, 0.4, 0.1)
        .without_tuning_cache()
        .across(&domain)
        .run(7)
        .unwrap();
    let stats = domain.stats();
    if ghost == 0 {
        // Steps after the first overlap their exchange with the inner sweep.
        assert_eq!(stats.exchanges, 7, "one exchange per step");
        assert!(
            stats.overlapped_seconds > 0.0,
            "no sweep overlapped an exchange"
        );
    } else {
        assert_eq!(
            stats.exchanges,
            7usize.div_ceil(ghost),
            "one exchange per {ghost} steps"
        );
    }
    if let Some(got) = domain.gather(&u).unwrap() {
        let mut gu = Grid3::<f64>::new(shape).unwrap();
        gu.set_boundary(Boundary::ZeroGradient);
        gu.fill_with(|p| value(3, p));
        gu.update_halo();
        let mut gv = gu.like();
        heat::steps(&mut gu, &mut gv, 0.4, 0.1)
            .without_tuning_cache()
            .run(7)
            .unwrap();
        assert!(bits(&got) == bits(&gu), "macro kernel, ghost {ghost}");
    }
    // Planes written in parallel are the files one process writes for the same planes.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    for (axis, index) in [(0, 9), (1, 0), (2, 16)] {
        let plane = Plane { axis, index };
        let path = dir.join(format!("mpi-plane-{}-{axis}-{index}.vti", world.size()));
        domain
            .write_plane_vti(&path, "u", &u, plane, &VtiOptions::default())
            .unwrap();
        let whole = domain.gather(&u).unwrap();
        if let Some(whole) = whole {
            let rest: Vec<usize> = (0..3).filter(|&d| d != axis).collect();
            let flat = Grid2::<f64>::from_fn([shape[rest[0]], shape[rest[1]]], 0, |[a, b]| {
                let mut p = [0; 3];
                (p[axis], p[rest[0]], p[rest[1]]) = (index, a, b);
                whole[p]
            })
            .unwrap();
            let mut want = Vec::new();
            write_vti_to(&mut want, &[("u", &flat)], &VtiOptions::default()).unwrap();
            let got = std::fs::read(&path).unwrap();
            assert!(
                got == want,
                "plane {plane:?} written in parallel differs from one process's"
            );
        }
    }
    let bad = domain.write_plane_vti(
        dir.join("never.vti"),
        "u",
        &u,
        Plane { axis: 3, index: 0 },
        &VtiOptions::default(),
    );
    assert_eq!(bad.unwrap_err().kind(), ErrorKind::BadArgument);
}

/// Scatter from rank 0 then gather back gives the global grid, boundary conditions included;
/// the scattered grids' halos are exchanged.
fn scatter_gather(world: &impl stencil::mpi::bindings::traits::Communicator) {
    let shape = [17, 10, 13];
    let domain = Domain::<3>::builder(shape)
        .halo(2)
        .periodic([false, true, false])
        .build(world)
        .unwrap();
    let mut global = Grid3::<f64>::with_halo(shape, 2).unwrap();
    global.fill_with(|p| value(5, p));
    use Boundary::*;
    set_faces(
        &mut global,
        &[
            [Dirichlet(3.5), Reflect],
            [Periodic, Periodic],
            [ZeroGradient, Dirichlet(-1.25)],
        ],
    );
    let mut local = domain.grid::<f64>().unwrap();
    let root = (domain.rank() == 0).then_some(&global);
    domain.scatter(root, &mut local).unwrap();
    assert_eq!(
        local.boundaries(),
        global.boundaries(),
        "scatter gives the global faces"
    );
    let back = domain.gather(&local).unwrap();
    if let Some(back) = back {
        assert!(bits(&back) == bits(&global), "scatter then gather");
    }
    // The scattered grid's halo is exchanged: every local point equals the global grid there.
    let origin = domain.local_origin();
    for p in points(&local) {
        let g: [isize; 3] = std::array::from_fn(|d| origin[d] + p[d]);
        if let Some(want) = global.get(g) {
            let got = local.get(p).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "local {p:?} global {g:?}");
        }
    }
}

/// `scatter` with arguments wrong on one rank fails on every rank (each would otherwise
/// wait for a message that rank never sends), with the same kind of error.
fn scatter_errors(world: &impl stencil::mpi::bindings::traits::Communicator) {
    let shape = [12, 9];
    let domain = Domain::<2>::builder(shape).halo(1).build(world).unwrap();
    let global = Grid2::<f64>::from_fn(shape, 1, |p| value(6, p)).unwrap();
    let mut local = domain.grid::<f64>().unwrap();
    let last = domain.ranks() - 1;
    // Rank 0 gives no global grid.
    let e = domain.scatter(None, &mut local).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument, "{e}");
    if domain.rank() != 0 {
        assert!(e.to_string().contains("rank 0 gave no global grid"), "{e}");
    }
    // Rank 0 gives a global grid of another shape.
    let wrong = Grid2::<f64>::new([12, 8]).unwrap();
    let root = (domain.rank() == 0).then_some(&wrong);
    let e = domain.scatter(root, &mut local).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch, "{e}");
    // The last rank's local grid has another shape (on one rank, rank 0's own).
    let mut other = Grid2::<f64>::new([3, 3]).unwrap();
    let target = if domain.rank() == last {
        &mut other
    } else {
        &mut local
    };
    let root = (domain.rank() == 0).then_some(&global);
    let e = domain.scatter(root, target).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch, "{e}");
    if domain.rank() != last {
        assert!(e.to_string().contains(&format!("rank {last} ")), "{e}");
    }
    // And right afterwards a correct scatter works on every rank.
    domain.scatter(root, &mut local).unwrap();
    let origin = domain.local_origin();
    let (lo, hi) = domain.owned_local();
    for i in lo[0]..hi[0] {
        for j in lo[1]..hi[1] {
            let g = [origin[0] as usize + i, origin[1] as usize + j];
            assert_eq!(local[[i, j]].to_bits(), value(6, g).to_bits());
        }
    }
}

/// A callback that stops the loop on one rank only (the last, on data only it sees) stops
/// every rank after the same step: no rank is left waiting in the next exchange, and the
/// field is one process's after that many steps.
fn stop_on_one_rank(world: &impl stencil::mpi::bindings::traits::Communicator, ghost: usize) {
    let shape = [24, 17];
    let domain = Domain::<2>::builder(shape)
        .halo(1)
        .ghost(ghost)
        .build(world)
        .unwrap();
    let stencil: Stencil<f64> = stencil::parse(&kernel_text(2, 1)).unwrap();
    let fill = |grid: &mut Grid2<f64>, seed: u64| {
        grid.set_boundary(Boundary::ZeroGradient);
        domain.fill_with(grid, |p| value(seed, p)).unwrap();
    };
    let mut u = domain.grid::<f64>().unwrap();
    fill(&mut u, 8);
    let mut c = domain.grid::<f64>().unwrap();
    fill(&mut c, 9);
    let mut out = u.like();
    let last = domain.ranks() - 1;
    let rank = domain.rank();
    let mut calls = Vec::new();
    let report = Steps::new(&stencil)
        .rotate(&["out", "u"])
        .grid("u", &mut u)
        .grid("out", &mut out)
        .input("c", &c)
        .param("a", 0.3)
        .without_tuning_cache()
        .across(&domain)
        .every(3, |state| {
            calls.push(state.step());
            // Only the last rank decides, on its own grid's data.
            if rank == last && state.step() >= 6 && state.grid("u").unwrap()[[0, 0]].is_finite() {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        })
        .run(30)
        .unwrap();
    assert_eq!(calls, [3, 6], "rank {rank}, ghost {ghost}: callbacks");
    assert!(report.stopped, "rank {rank}, ghost {ghost}: stopped");
    assert_eq!(report.steps, 6, "rank {rank}, ghost {ghost}: steps");
    let got = domain.gather(&u).unwrap();
    if let Some(got) = got {
        let mut gu = Grid2::<f64>::with_halo(shape, 1).unwrap();
        gu.set_boundary(Boundary::ZeroGradient);
        gu.fill_with(|p| value(8, p));
        let mut gc = gu.like();
        gc.fill_with(|p| value(9, p));
        let mut gout = gu.like();
        Steps::new(&stencil)
            .rotate(&["out", "u"])
            .grid("u", &mut gu)
            .grid("out", &mut gout)
            .input("c", &gc)
            .param("a", 0.3)
            .without_tuning_cache()
            .run(6)
            .unwrap();
        assert!(
            bits(&got) == bits(&gu),
            "stopped after 6 steps, ghost {ghost}"
        );
    }
}

/// Ranks on this machine that may run on the same cores split them: the global backend's
/// pools are pinned to disjoint cores (while there are as many cores as ranks), and start
/// their share of threads. Prints each rank's cores.
fn core_shares(world: &impl stencil::mpi::bindings::traits::Communicator) {
    use stencil::mpi::bindings::traits::CommunicatorCollectives;
    const WORDS: usize = 16;
    let mask = |cpus: &[usize]| {
        let mut m = [0u64; WORDS];
        for &c in cpus.iter().filter(|&&c| c < 64 * WORDS) {
            m[c / 64] |= 1 << (c % 64);
        }
        m
    };
    let backend = stencil_cpu::CpuBackend::global();
    let allowed = stencil_cpu::allowed_cpus();
    let ranks = world.size() as usize;
    let rank = world.rank() as usize;
    let mut pools = vec![0u64; WORDS * ranks];
    world.all_gather_into(&mask(backend.cpus())[..], &mut pools[..]);
    let mut alloweds = vec![0u64; WORDS * ranks];
    world.all_gather_into(&mask(&allowed)[..], &mut alloweds[..]);
    let mut threads = vec![0u64; ranks];
    world.all_gather_into(&(backend.threads() as u64), &mut threads[..]);
    let cpus_of = |all: &[u64], r: usize| -> Vec<usize> {
        (0..64 * WORDS)
            .filter(|&c| all[r * WORDS + c / 64] & (1 << (c % 64)) != 0)
            .collect()
    };
    if rank == 0 {
        for (r, n) in threads.iter().enumerate() {
            println!(
                "mpi: rank {r}: {n} threads of the global backend pinned to CPUs {:?} (may run \
                 on {:?})",
                cpus_of(&pools, r),
                cpus_of(&alloweds, r)
            );
        }
    }
    let cores: Vec<usize> = (0..64 * WORDS)
        .filter(|&c| (0..ranks).any(|r| alloweds[r * WORDS + c / 64] & (1 << (c % 64)) != 0))
        .collect();
    if ranks > cores.len() || allowed.is_empty() {
        return;
    }
    for r in 0..ranks {
        assert!(
            !cpus_of(&pools, r).is_empty(),
            "rank {r}'s pool is not pinned"
        );
        for q in 0..r {
            let shared: Vec<usize> = cpus_of(&pools, r)
                .into_iter()
                .filter(|c| cpus_of(&pools, q).contains(c))
                .collect();
            assert!(
                shared.is_empty(),
                "ranks {q} and {r} both pin workers to CPUs {shared:?}"
            );
        }
    }
    if std::env::var_os(stencil_cpu::THREADS_ENV).is_none() {
        let total: u64 = threads.iter().sum();
        assert!(
            total as usize <= cores.len(),
            "{ranks} ranks start {total} threads on {} cores",
            cores.len()
        );
    }
}

/// Ranks with the same local shape share one tuning: the lowest of them tunes (or reads the
/// cache) and the others receive its schedule; ranks of another shape tune for themselves.
fn shared_tuning(world: &impl stencil::mpi::bindings::traits::Communicator) {
    let domain = Domain::<2>::builder([1031, 1024])
        .halo(1)
        .build(world)
        .unwrap();
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("mpi-tuning-{}.json", domain.ranks()));
    if domain.rank() == 0 {
        let _ = std::fs::remove_file(&cache);
    }
    domain.barrier();
    let stencil: Stencil<f64> = stencil::parse(&kernel_text(2, 1)).unwrap();
    let mut u = domain.grid::<f64>().unwrap();
    domain.fill_with(&mut u, |p| value(7, p)).unwrap();
    let c = u.like();
    let mut out = u.like();
    let report = Steps::new(&stencil)
        .rotate(&["out", "u"])
        .grid("u", &mut u)
        .grid("out", &mut out)
        .input("c", &c)
        .param("a", 0.3)
        .tune(stencil::TunePolicy::Quick)
        .tuning_cache(stencil::TuningCache::at(&cache))
        .across(&domain)
        .run(8)
        .unwrap();
    // Every rank's local shape, to find the lowest rank with this rank's shape.
    let shape = domain.local_shape();
    let mut shapes = vec![[0u64; 2]; domain.ranks()];
    for (r, s) in shapes.iter_mut().enumerate() {
        *s = [shape[0] as u64, shape[1] as u64];
        domain.broadcast(&mut s[..], r);
    }
    let mine = [shape[0] as u64, shape[1] as u64];
    let leader = shapes.iter().position(|s| *s == mine).unwrap();
    let source = report.tuning.source;
    if leader == domain.rank() {
        assert_eq!(
            source,
            stencil::TuningSource::Tuned,
            "rank {} leads its shape",
            domain.rank()
        );
    } else {
        assert_eq!(
            source,
            stencil::TuningSource::Shared,
            "rank {} follows rank {leader}",
            domain.rank()
        );
        assert_eq!(report.tuning.description, format!("from rank {leader}"));
    }
}

/// Mistakes every rank makes alike fail alike.
fn errors(world: &impl stencil::mpi::bindings::traits::Communicator) {
    let ranks = world.size() as usize;
    let domain = Domain::<2>::builder([16 * ranks, 9])
        .halo(2)
        .ghost(1)
        .build(world)
        .unwrap();
    let stencil: Stencil<f64> = stencil::parse(&kernel_text(2, 2)).unwrap();
    let mut u = domain.grid::<f64>().unwrap();
    let c = domain.grid::<f64>().unwrap();
    let mut out = u.like();
    let e = Steps::new(&stencil)
        .rotate(&["out", "u"])
        .grid("u", &mut u)
        .grid("out", &mut out)
        .input("c", &c)
        .param("a", 0.3)
        .across(&domain)
        .run(3)
        .unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::BadArgument,
        "ghost 1 under radius 2: {e}"
    );
    assert!(
        e.to_string().contains(
            "reads 2 points away but the domain's ghost zones are 1 deep: use a ghost depth \
             of 0 (an exchange every step) or at least 2"
        ),
        "{e}"
    );
    // Periodic faces on a dimension the domain does not wrap.
    u.set_boundary(Boundary::Periodic);
    assert_eq!(
        domain.exchange(&mut u).unwrap_err().kind(),
        ErrorKind::BadArgument
    );
    // A grid of another shape.
    let mut other = Grid2::<f64>::new([5, 5]).unwrap();
    assert_eq!(
        domain.exchange(&mut other).unwrap_err().kind(),
        ErrorKind::ShapeMismatch
    );
    // A process grid that does not match the rank count.
    let e = Domain::<2>::builder([32, 32])
        .process_grid([ranks + 1, 1])
        .build(world);
    assert_eq!(e.err().map(|e| e.kind()), Some(ErrorKind::BadArgument));
    // A 0-D domain has nothing to cut, whatever its ghost depth.
    for ghost in [0, 2] {
        let e = Domain::<0>::builder([])
            .ghost(ghost)
            .build(world)
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidShape, "0-D, ghost {ghost}: {e}");
        assert!(e.to_string().contains("at least one dimension"), "{e}");
    }
    // A halo wider than a rank's part.
    if ranks > 1 {
        let e = Domain::<1>::builder([3 * ranks]).halo(4).build(world);
        assert_eq!(e.err().map(|e| e.kind()), Some(ErrorKind::InvalidShape));
    }
}

/// Which loop of several kernels per step a stages case runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scheme {
    /// Staggered velocity-pressure acoustics: two stages of radius 1, three chains, a
    /// coefficient the loop exchanges and one given read only.
    Acoustic,
    /// A Laplacian of radius 2 into a temporary in no chain, then a leapfrog step of radius 1
    /// reading it: a three-level chain.
    Leapfrog,
}

impl Scheme {
    /// The loop's grids: `(name, seed, written before read)`. Grids written before any read
    /// start poisoned across ranks and random in one process.
    fn grids(self) -> &'static [(&'static str, u64, bool)] {
        match self {
            Scheme::Acoustic => &[
                ("p", 41, false),
                ("p_next", 42, true),
                ("vx", 43, false),
                ("vx_next", 44, true),
                ("vy", 45, false),
                ("vy_next", 46, true),
                ("b", 47, false),
                ("k", 48, false),
            ],
            Scheme::Leapfrog => &[
                ("u", 51, false),
                ("u_prev", 52, false),
                ("u_next", 53, true),
                ("l", 54, true),
            ],
        }
    }

    /// The largest radius of a stage (the halo) and the sum of the stages' radii.
    fn radii(self) -> (usize, usize) {
        match self {
            Scheme::Acoustic => (1, 2),
            Scheme::Leapfrog => (2, 3),
        }
    }
}

/// The loop of `scheme` over `grids` (named as [`Scheme::grids`]), its sources on the grid
/// the last stage writes, the first receiver set there and the second on the grid the first
/// stage writes.
fn stages_of<'g>(
    scheme: Scheme,
    grids: &'g mut [(&'static str, Grid2<f64>)],
    sources: &'g Sources<f64, 2>,
    receivers: &'g mut [Receivers<f64, 2>],
) -> Stages<'g, f64, 2> {
    let mut stages = Stages::new();
    for (name, grid) in grids.iter_mut() {
        stages = if *name == "k" {
            stages.input(name, grid)
        } else {
            stages.grid(name, grid)
        };
    }
    let [first, second] = receivers else {
        unreachable!("two receiver sets")
    };
    match scheme {
        Scheme::Acoustic => stages
            .rotate(&["vx_next", "vx"])
            .rotate(&["vy_next", "vy"])
            .rotate(&["p_next", "p"])
            .stage(Stage::new(velocity2::stencil()).param("dt", 0.3))
            .stage(
                Stage::new(pressure2::stencil())
                    .bind("vx", "vx_next")
                    .bind("vy", "vy_next")
                    .param("dt", 0.25),
            )
            .sources("p_next", sources)
            .receivers("p_next", first)
            .receivers("vx_next", second),
        Scheme::Leapfrog => stages
            .rotate(&["u_next", "u", "u_prev"])
            .stage(Stage::new(lap2::stencil()))
            .stage(Stage::new(leap2::stencil()).param("c", 0.1))
            .sources("u_next", sources)
            .receivers("u_next", first)
            .receivers("l", second),
    }
}

/// Sparse positions for a domain cut at `cuts` (per dimension, the first global index of
/// each part after the first): on and between points, on the global faces, and straddling
/// every cut (corners on both sides), one of them twice.
fn sparse_positions(shape: [usize; 2], cuts: &[Vec<usize>; 2]) -> [Vec<[f64; 2]>; 3] {
    let n = shape.map(|x| x as f64);
    let across = |d: usize| -> Vec<f64> {
        let mut xs: Vec<f64> = cuts[d].iter().map(|&c| c as f64 - 0.5).collect();
        if xs.is_empty() {
            xs.push((n[d] / 2.0).floor() - 0.5);
        }
        xs
    };
    let mut straddling = Vec::new();
    for &x in &across(0) {
        for &y in &across(1) {
            straddling.push([x, y + 0.25]);
        }
    }
    let mut sources = straddling.clone();
    sources.extend([
        [0.0, 0.0],
        [n[0] - 1.0, n[1] - 1.0],
        [(n[0] / 3.0).floor() + 0.75, n[1] - 1.0],
        [across(0)[0] + 0.5, 3.0],
        straddling[0],
    ]);
    let mut every_step = sources.clone();
    every_step.extend([[across(0)[0], 2.5], [1.5, across(1)[0] - 0.1]]);
    let every_third = vec![
        [across(0)[0] + 0.2, across(1)[0] - 0.1],
        [(n[0] / 2.0).floor(), (n[1] / 2.0).floor()],
        [0.5, n[1] - 1.5],
    ];
    [sources, every_step, every_third]
}

/// One stages case: `scheme` on `shape` with `faces`, over process grid `dims` with ghost
/// depth `ghost` (with twice the reach, under a schedule blocking 4 steps in slabs of 2
/// planes), 7 steps (run as 4, then 3 from step 4) against one process's loop of 7
/// computed on every rank: each grid's owned box and its gathered interior, and every trace,
/// bit for bit. Returns whether it ran (false: the layout cannot hold it).
fn stages_case(
    world: &impl stencil::mpi::bindings::traits::Communicator,
    scheme: Scheme,
    shape: [usize; 2],
    faces: [[Boundary<f64>; 2]; 2],
    dims: [usize; 2],
    ghost: usize,
) -> bool {
    let (halo, _) = scheme.radii();
    let case = Case {
        shape,
        dims,
        radius: halo,
        ghost,
        faces,
        steps: 7,
    };
    let what = format!("stages {scheme:?}: {}", case.describe());
    if Decomposition::with_dims(shape, dims, halo.max(ghost)).is_err() {
        return false;
    }
    let periodic = case.periodic();
    let domain = Domain::<2>::builder(shape)
        .halo(halo)
        .ghost(ghost)
        .periodic(periodic)
        .process_grid(dims)
        .build(world)
        .unwrap();
    let origin = domain.local_origin();
    let decomposition = domain.decomposition();
    let cuts: [Vec<usize>; 2] =
        std::array::from_fn(|d| (1..dims[d]).map(|c| decomposition.start(d, c)).collect());
    let [source_at, every_step, every_third] = sparse_positions(shape, &cuts);
    let mut sources = Sources::new();
    for (s, &position) in source_at.iter().enumerate() {
        let series = (0..7)
            .map(|t| value_at(60 + s as u64, [t as isize]) - 0.7)
            .collect();
        sources = sources.point(position, series);
    }
    let receivers = || {
        vec![
            Receivers::new(every_step.clone()),
            Receivers::new(every_third.clone()).every(3),
        ]
    };
    // One process, on every rank.
    let mut global: Vec<(&'static str, Grid2<f64>)> = scheme
        .grids()
        .iter()
        .map(|&(name, seed, _)| (name, one_grid(&case, halo, seed)))
        .collect();
    let mut one_traces = receivers();
    let report = stages_of(scheme, &mut global, &sources, &mut one_traces)
        .run(7)
        .unwrap();
    assert_eq!(report.steps, 7, "{what}");
    // Across ranks: the same values at the same global points, the caller's beyond the global
    // faces; grids written before they are read poisoned.
    let mut local: Vec<(&'static str, Grid2<f64>)> = scheme
        .grids()
        .iter()
        .map(|&(name, seed, written)| {
            let mut grid = domain.grid::<f64>().unwrap();
            set_faces(&mut grid, &faces);
            set_caller_values(&mut grid, origin, shape, periodic, seed + 10);
            if written {
                domain.fill_with(&mut grid, |_| f64::NAN).unwrap();
            } else {
                domain.fill_with(&mut grid, |p| value(seed, p)).unwrap();
            }
            (name, grid)
        })
        .collect();
    let mut traces = receivers();
    domain.reset_stats();
    // With two steps per exchange, blocked in time across both stages by the local loop.
    let (_, reach) = scheme.radii();
    let blocked = (ghost == 2 * reach).then_some(Schedule::Cpu(CpuSchedule {
        time_depth: 4,
        time_slab: 2,
        ..CpuSchedule::default()
    }));
    fn scheduled<'g>(stages: Stages<'g, f64, 2>, blocked: Option<Schedule>) -> Stages<'g, f64, 2> {
        match blocked {
            Some(schedule) => stages.schedule(schedule),
            None => stages,
        }
    }
    let first = scheduled(
        stages_of(scheme, &mut local, &sources, &mut traces),
        blocked,
    )
    .across(&domain)
    .run(4)
    .unwrap();
    let rest = scheduled(
        stages_of(scheme, &mut local, &sources, &mut traces),
        blocked,
    )
    .across(&domain)
    .first_step(4)
    .run(3)
    .unwrap();
    assert_eq!((first.steps, rest.steps), (4, 3), "{what}");
    let exchanges = domain.stats().exchanges;
    if ghost >= reach {
        // The chains' earlier levels before every chunk (the coefficient `b` once per call).
        let levels = if scheme == Scheme::Acoustic { 3 } else { 2 };
        let chunks = 4usize.div_ceil(ghost / reach) + 3usize.div_ceil(ghost / reach);
        let coefficients = if scheme == Scheme::Acoustic { 2 } else { 0 };
        assert_eq!(exchanges, levels * chunks + coefficients, "{what}");
    } else {
        // Before each call, then after each stage the grids it wrote that a stage reads.
        let (before, per_step) = match scheme {
            Scheme::Acoustic => (3 + 1, 3),
            Scheme::Leapfrog => (2, 2),
        };
        assert_eq!(exchanges, 2 * before + 7 * per_step, "{what}");
    }
    let (lo, hi) = domain.owned_local();
    for ((name, got), (_, want)) in local.iter().zip(&global) {
        for i in lo[0]..hi[0] {
            for j in lo[1]..hi[1] {
                let g = [
                    (origin[0] + i as isize) as usize,
                    (origin[1] + j as isize) as usize,
                ];
                assert!(
                    got[[i, j]].to_bits() == want[g].to_bits(),
                    "{what}: `{name}` at global {g:?} on rank {}: {} against one process's {}",
                    domain.rank(),
                    got[[i, j]],
                    want[g]
                );
            }
        }
        if let Some(whole) = domain.gather(got).unwrap() {
            for i in 0..shape[0] {
                for j in 0..shape[1] {
                    assert!(
                        whole[[i, j]].to_bits() == want[[i, j]].to_bits(),
                        "{what}: gathered `{name}` at {:?}",
                        [i, j]
                    );
                }
            }
        }
    }
    for (set, (got, want)) in traces.iter().zip(&one_traces).enumerate() {
        assert_eq!(got.traces().len(), want.traces().len(), "{what}");
        for (r, (a, b)) in got.traces().iter().zip(want.traces()).enumerate() {
            let bits = |t: &[f64]| t.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(
                bits(a) == bits(b) && !a.is_empty(),
                "{what}: receiver {r} of set {set} on rank {}: {a:?} against one process's {b:?}",
                domain.rank()
            );
        }
    }
    true
}

/// Loops of stages across ranks that cannot run fail on every rank alike, never hang, and a
/// correct loop runs right afterwards.
fn stages_errors(world: &impl stencil::mpi::bindings::traits::Communicator) {
    let ranks = world.size() as usize;
    let shape = [8 * ranks, 9];
    let build = |ghost: usize| {
        Domain::<2>::builder(shape)
            .halo(2)
            .ghost(ghost)
            .process_grid([ranks, 1])
            .build(world)
            .unwrap()
    };
    let grids = |domain: &Domain<2>| -> Vec<(&'static str, Grid2<f64>)> {
        Scheme::Leapfrog
            .grids()
            .iter()
            .map(|&(name, seed, _)| {
                let mut grid = domain.grid::<f64>().unwrap();
                grid.set_boundary(Boundary::ZeroGradient);
                domain.fill_with(&mut grid, |p| value(seed, p)).unwrap();
                (name, grid)
            })
            .collect()
    };
    let series = vec![1.0; 4];
    let run = |domain: &Domain<2>,
               grids: &mut Vec<(&'static str, Grid2<f64>)>,
               source: [f64; 2],
               receiver: [f64; 2]| {
        let sources = Sources::new().point(source, series.clone());
        let mut receivers = vec![
            Receivers::new(vec![receiver]),
            Receivers::new(vec![[1.0, 1.0]]),
        ];
        stages_of(Scheme::Leapfrog, grids, &sources, &mut receivers)
            .across(domain)
            .run(4)
    };
    let last = ranks - 1;
    let rank = world.rank() as usize;
    // A ghost zone shallower than a step's reach (3) but not 0.
    let domain = build(2);
    let mut g = grids(&domain);
    let e = run(&domain, &mut g, [1.0, 1.0], [1.0, 1.0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument, "{e}");
    assert!(e.to_string().contains("sum of their radii"), "{e}");
    let domain = build(0);
    let mut g = grids(&domain);
    // A position outside the global interior (inside a rank's shape on none).
    let outside = [shape[0] as f64 - 0.5, 1.0];
    let e = run(&domain, &mut g, outside, [1.0, 1.0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument, "{e}");
    assert!(e.to_string().contains("outside the interior"), "{e}");
    // A receiver position given differently on the last rank.
    let mine = if rank == last { [2.0, 1.0] } else { [1.0, 1.0] };
    let disagreeing = run(&domain, &mut g, [1.0, 1.0], mine);
    if ranks > 1 {
        let e = disagreeing.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadArgument, "{e}");
        assert!(e.to_string().contains("the ranks disagree"), "{e}");
    } else {
        disagreeing.unwrap();
    }
    // Boundary conditions given differently on the last rank (exchanges would follow
    // different plans).
    let mut faces = g.clone();
    if rank == last {
        faces[0].1.set_boundary(Boundary::Dirichlet(0.5));
    }
    let disagreeing = run(&domain, &mut faces, [1.0, 1.0], [1.0, 1.0]);
    if ranks > 1 {
        let e = disagreeing.unwrap_err();
        assert!(e.to_string().contains("the ranks disagree"), "{e}");
    } else {
        disagreeing.unwrap();
    }
    // A grid of another shape on the last rank only.
    let mut wrong = g.clone();
    if rank == last {
        wrong[0].1 = Grid2::<f64>::with_halo([3, 3], 2).unwrap();
        wrong[0].1.set_boundary(Boundary::ZeroGradient);
    }
    let e = run(&domain, &mut wrong, [1.0, 1.0], [1.0, 1.0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch, "{e}");
    if rank != last {
        assert!(
            e.to_string().contains(&format!("rank {last} refused")),
            "{e}"
        );
    }
    // A kernel reading its point's indices, in a loop of stages and in a time loop.
    let mut u = domain.grid::<f64>().unwrap();
    let mut out = domain.grid::<f64>().unwrap();
    let e = Stages::new()
        .grid("u", &mut u)
        .grid("out", &mut out)
        .rotate(&["out", "u"])
        .stage(Stage::new(by_row::stencil()))
        .across(&domain)
        .run(1)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument, "{e}");
    assert!(e.to_string().contains("reads its point's indices"), "{e}");
    let e = Steps::new(by_row::stencil())
        .rotate(&["out", "u"])
        .grid("u", &mut u)
        .grid("out", &mut out)
        .across(&domain)
        .run(1)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadArgument, "{e}");
    assert!(e.to_string().contains("reads its point's indices"), "{e}");
    // And a correct loop runs.
    run(&domain, &mut g, [1.0, 1.0], [1.0, 1.0]).unwrap();
}

/// Every stages case over every process grid of the rank count: two schemes, every kind of
/// face, ghost depths of 0, the reach and twice the reach (and one between). Returns the
/// cases run and refused.
fn stages_cases(world: &impl stencil::mpi::bindings::traits::Communicator) -> (usize, usize) {
    use Boundary::*;
    let ranks = world.size() as usize;
    let (mut ran, mut refused) = (0, 0);
    let kinds = [Dirichlet(0.75), ZeroGradient, Reflect, UserManaged];
    for scheme in [Scheme::Acoustic, Scheme::Leapfrog] {
        let (_, reach) = scheme.radii();
        let shape = match scheme {
            Scheme::Acoustic => [25, 23],
            Scheme::Leapfrog => [27, 26],
        };
        let mut faces: Vec<[[Boundary<f64>; 2]; 2]> = (0..kinds.len())
            .map(|n| {
                let (a, b) = (kinds[n], kinds[(n + 1) % kinds.len()]);
                [[a, b], [b, a]]
            })
            .collect();
        faces.push([[Periodic; 2], [Reflect, Dirichlet(-0.5)]]);
        faces.push([[Periodic; 2], [Periodic; 2]]);
        for ghost in [0, reach, reach + 1, 2 * reach] {
            for dims in process_grids::<2>(ranks) {
                for &f in &faces {
                    if stages_case(world, scheme, shape, f, dims, ghost) {
                        ran += 1;
                    } else {
                        refused += 1;
                    }
                }
            }
        }
    }
    (ran, refused)
}

fn main() {
    let universe = stencil::mpi::initialize().unwrap();
    let world = universe.world();
    use stencil::mpi::bindings::traits::Communicator;
    // A failed assertion on one rank ends the job instead of leaving the others waiting.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        stencil::mpi::bindings::topology::SimpleCommunicator::world().abort(101);
    }));
    let ranks = world.size() as usize;
    let rank = world.rank();
    if std::env::var_os("STENCIL_MPI_TEST_ABORT").is_some() {
        let domain = Domain::<1>::builder([64]).build(&world).unwrap();
        if rank as usize + 1 == ranks {
            let failed: Result<(), stencil::Error> = Err(stencil::Error::new(
                ErrorKind::Io,
                "planted failure on one rank",
            ));
            domain.abort_on_error(failed);
        }
        // The other ranks wait here; the abort must end them.
        domain.barrier();
        domain.barrier();
        println!("mpi abort test: rank {rank} passed a barrier that the failed rank never reached");
        std::process::exit(0);
    }
    use Boundary::*;
    let conditions = [Dirichlet(0.75), ZeroGradient, Reflect, UserManaged];
    let mut ran = 0;
    let mut refused = 0;
    let mut count = |ok: bool| if ok { ran += 1 } else { refused += 1 };
    for radius in 1..=4 {
        for ghost in [0, radius, 2 * radius] {
            for dims in process_grids::<2>(ranks) {
                for (n, &a) in conditions.iter().enumerate() {
                    let b = conditions[(n + radius) % conditions.len()];
                    let case = Case {
                        shape: [23 + radius, 19],
                        dims,
                        radius,
                        ghost,
                        faces: [[a, b], [b, a]],
                        steps: 5,
                    };
                    count(run_case(&world, &case));
                }
                let periodic = Case {
                    shape: [21, 17 + radius],
                    dims,
                    radius,
                    ghost,
                    faces: [[Periodic; 2], [Reflect, Dirichlet(-0.5)]],
                    steps: 4,
                };
                count(run_case(&world, &periodic));
            }
        }
    }
    for (radius, ghost) in [(1, 0), (1, 2), (2, 2), (3, 0)] {
        for dims in process_grids::<3>(ranks) {
            let case = Case {
                shape: [13, 11, 9],
                dims,
                radius,
                ghost,
                faces: [
                    [ZeroGradient, Dirichlet(0.5)],
                    [Periodic; 2],
                    [Reflect, ZeroGradient],
                ],
                steps: 3,
            };
            count(run_case(&world, &case));
        }
    }
    macro_kernel(&world, 0);
    macro_kernel(&world, 3);
    scatter_gather(&world);
    scatter_errors(&world);
    stop_on_one_rank(&world, 0);
    stop_on_one_rank(&world, 2);
    // Every rank runs on this machine here: each gets its share of the last-level cache.
    let domain = Domain::<1>::builder([64]).build(&world).unwrap();
    assert_eq!(domain.ranks_on_node(), ranks);
    let machine = stencil_cpu::Machine::detect();
    assert_eq!(machine.llc_share(), machine.llc() / ranks);
    core_shares(&world);
    shared_tuning(&world);
    errors(&world);
    let (stage_cases, stage_refused) = stages_cases(&world);
    stages_errors(&world);
    if rank == 0 {
        println!(
            "mpi stages: {stage_cases} loops of stages with sources and receivers bit-identical \
             to one process on {ranks} ranks ({stage_refused} layouts refused as they must be); \
             their errors agreed on every rank"
        );
        println!(
            "mpi: {ran} cases bit-identical to one process on {ranks} ranks ({refused} layouts \
             refused as they must be); macro kernel, overlap, parallel plane files, scatter \
             errors, a stop on one rank, core shares, shared tuning and errors checked"
        );
    }
}
