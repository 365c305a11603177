//! The grids of a time loop as backends see them: [`WrittenGrid`] (storage and boundary
//! conditions), [`FieldSlot`] (where a kernel field lives in a loop), and the lending of one
//! kernel's job over a loop's grids, which one-kernel and multi-stage loops share.

use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::grid::Boundary;
use crate::ir::Role;
use crate::job::Job;
use crate::stencil::Stencil;
use crate::view::{FieldView, FieldViewMut, Geometry};

/// A grid a time loop writes: its storage and its boundary conditions (one pair per
/// dimension, as [`fill_halo`](crate::grid::fill_halo) takes them).
#[derive(Debug)]
pub struct WrittenGrid<'a, T> {
    /// The whole storage and its layout.
    pub view: FieldViewMut<'a, T>,
    /// `faces[d][side.index()]`.
    pub faces: Vec<[Boundary<T>; 2]>,
    /// Whether the halo points of the constant faces (`Dirichlet`) hold their values, so
    /// fills may skip those faces (what `Grid::refresh_halo` skips too). Set by the first
    /// whole fill of the grid.
    pub constant_faces_filled: bool,
}

impl<T: Element> WrittenGrid<'_, T> {
    /// The faces a fill needs to write: all of them, or with the constant faces left out
    /// (as [`Boundary::UserManaged`]) once [`constant_faces_filled`](Self::constant_faces_filled):
    /// their points already hold the values a fill would write, and the faces that copy
    /// read them in place, so the halo ends the same.
    pub fn fill_faces(&self) -> Vec<[Boundary<T>; 2]> {
        skipping_constant(&self.faces, self.constant_faces_filled)
    }
}

/// `faces`, with `Dirichlet` faces as `UserManaged` when `skip`.
pub fn skipping_constant<T: Element>(
    faces: &[[Boundary<T>; 2]],
    skip: bool,
) -> Vec<[Boundary<T>; 2]> {
    faces
        .iter()
        .map(|pair| {
            pair.map(|b| match b {
                Boundary::Dirichlet(_) if skip => Boundary::UserManaged,
                other => other,
            })
        })
        .collect()
}

/// Where one field of a kernel lives in a time loop ([`TimeLoop`](crate::TimeLoop) or
/// [`StageLoop`](crate::StageLoop)).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FieldSlot {
    /// A read-only input: index into the loop's coefficients.
    Coefficient(usize),
    /// A field of chain `chain` at position `position`.
    Chain {
        /// The chain.
        chain: usize,
        /// Its position in the chain (0: the output).
        position: usize,
    },
    /// An output in no chain: index into the job's lone outputs.
    Lone(usize),
}

/// A loop's grids, borrowed to lend a job over them.
pub(crate) struct LoopGrids<'l, 'a, T> {
    /// Per chain, its grids in chain order.
    pub(crate) chains: &'l mut [Vec<WrittenGrid<'a, T>>],
    /// The written grids in no chain.
    pub(crate) lone: &'l mut [WrittenGrid<'a, T>],
    /// The read-only grids.
    pub(crate) coefficients: &'l [FieldView<'a, T>],
}

/// Calls `run` with the job of a kernel whose fields live at `slots` (with its `params`),
/// over a loop's grids (`chains`, each a ring, `lone`, `coefficients`) at the step after
/// `before` steps: position `p` of a chain of `L` grids is its grid `(p - before) mod L`. A
/// grid bound to two fields is lent once, read only. The job's step number
/// ([`Job::set_step`]) is `step`.
///
/// # Errors
/// The job's validation errors ([`Job::new`]).
///
/// # Panics
/// If a grid is written by two fields, or written and read (the loops' validation refuses
/// both).
pub(crate) fn lend_job<T: Element, R>(
    stencil: &Stencil<T>,
    (slots, params): (&[FieldSlot], &[T]),
    grids: LoopGrids<'_, '_, T>,
    (before, step): (usize, usize),
    run: impl FnOnce(&mut Job<'_, T>) -> R,
) -> Result<R> {
    let LoopGrids {
        chains,
        lone,
        coefficients,
    } = grids;
    let grid_of: Vec<Vec<usize>> = chains
        .iter()
        .map(|c| {
            let len = c.len();
            (0..len).map(|p| (p + len - before % len) % len).collect()
        })
        .collect();
    let mut chain_views: Vec<Vec<Option<FieldViewMut<'_, T>>>> = chains
        .iter_mut()
        .map(|grids| grids.iter_mut().map(|g| Some(g.view.reborrow())).collect())
        .collect();
    let mut lone_views: Vec<Option<FieldViewMut<'_, T>>> =
        lone.iter_mut().map(|g| Some(g.view.reborrow())).collect();
    let mut shared: Vec<(FieldSlot, FieldView<'_, T>)> = Vec::new();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (&slot, field) in slots.iter().zip(&stencil.kernel().fields) {
        if let FieldSlot::Coefficient(k) = slot {
            inputs.push(coefficients[k]);
            continue;
        }
        if let Some(&(_, view)) = shared.iter().find(|(s, _)| *s == slot) {
            inputs.push(view);
            continue;
        }
        let view = match slot {
            FieldSlot::Chain { chain, position } => {
                chain_views[chain][grid_of[chain][position]].take()
            }
            FieldSlot::Lone(k) => lone_views[k].take(),
            FieldSlot::Coefficient(_) => None,
        }
        .unwrap_or_else(|| unreachable!("stencil-core time loops: a grid written twice"));
        match field.role {
            Role::Input => {
                let view = view.into_shared();
                shared.push((slot, view));
                inputs.push(view);
            }
            Role::Output => outputs.push(view),
        }
    }
    let mut job = Job::new(stencil, inputs, outputs, params.to_vec())?;
    job.set_step(step as u64);
    Ok(run(&mut job))
}

/// One grid of a loop as [`check_grids`] sees it.
pub(crate) struct GridCheck<'n> {
    /// Its name.
    pub(crate) name: &'n str,
    /// Its layout.
    pub(crate) geom: Geometry,
    /// Whether the loop writes it.
    pub(crate) written: bool,
    /// Its storage's address range.
    pub(crate) range: std::ops::Range<usize>,
    /// How far the loop reads it, and why (for the message).
    pub(crate) reach: (u32, String),
}

impl<'n> GridCheck<'n> {
    /// The grid named `name` over `view`'s storage.
    pub(crate) fn of<T>(name: &'n str, geom: Geometry, data: &[T], written: bool) -> Self {
        let range = data.as_ptr_range();
        GridCheck {
            name,
            geom,
            written,
            range: range.start as usize..range.end as usize,
            reach: (0, String::new()),
        }
    }
}

/// The checks every time loop makes of its grids (`who` names the loop in messages): each
/// grid's layout, `n_dims` dimensions and one interior shape, a halo as wide as its reach, and
/// no written grid sharing storage with another.
///
/// # Errors
/// [`ErrorKind::DimensionMismatch`], [`ErrorKind::ShapeMismatch`],
/// [`ErrorKind::HaloTooNarrow`], [`ErrorKind::AliasedGrids`], and a layout's error.
pub(crate) fn check_grids<T>(grids: &[GridCheck<'_>], n_dims: usize, who: &str) -> Result<()> {
    for g in grids {
        let len = (g.range.end - g.range.start) / size_of::<T>();
        crate::view::check_layout::<T>(g.name, &g.geom, len)?;
    }
    let Some(first) = grids.first() else {
        return Ok(());
    };
    for g in grids {
        if g.geom.n_dims != n_dims {
            return Err(Error::new(
                ErrorKind::DimensionMismatch,
                format!(
                    "{who} is {n_dims}-D but grid `{}` is {}-D",
                    g.name, g.geom.n_dims
                ),
            ));
        }
        if g.geom.interior() != first.geom.interior() {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!(
                    "grid `{}` has shape {:?} but grid `{}` has shape {:?}",
                    g.name,
                    g.geom.interior(),
                    first.name,
                    first.geom.interior()
                ),
            ));
        }
    }
    for g in grids {
        let (r, why) = &g.reach;
        if (g.geom.halo as u64) < u64::from(*r) {
            return Err(Error::new(
                ErrorKind::HaloTooNarrow,
                format!(
                    "{who}: grid `{}` has a halo of {} but needs {r} ({why}): allocate it with \
                     `Grid::with_halo(shape, {r})`",
                    g.name, g.geom.halo
                ),
            ));
        }
    }
    for (i, a) in grids.iter().enumerate() {
        for b in &grids[i + 1..] {
            let overlap = a.range.start < b.range.end && b.range.start < a.range.end;
            if overlap && (a.written || b.written) {
                return Err(Error::new(
                    ErrorKind::AliasedGrids,
                    format!("grids `{}` and `{}` share storage", a.name, b.name),
                ));
            }
        }
    }
    Ok(())
}
