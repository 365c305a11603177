//! The name resolution of a [`Stages`] loop: each grid's slot, each stage's grids and
//! parameters, found by name and checked before any grid is lent.

use stencil_core::stages::GridNames;
use stencil_core::time_loop::FieldSlot;
use stencil_core::{Element, Error, ErrorKind, Result, Role};

use super::{Resolved, ResolvedStage, Stages, grid_of};
use crate::loop_grid::LoopGrid;

impl<T: Element, const D: usize> Stages<'_, T, D> {
    /// Resolves the loop's names: each grid's slot (chains first, then the written grids in
    /// no chain, then read-only ones), each stage's grids and parameters; and checks that
    /// every grid a stage reads has a current halo.
    pub(super) fn resolve(&self) -> Result<Resolved<T>> {
        let bad = |m: String| Error::new(ErrorKind::BadArgument, m);
        if self.stages.is_empty() {
            return Err(bad("a time loop of stages needs at least one stage".into()));
        }
        let index_of = |name: &str| self.grids.iter().position(|(n, _)| n == name);
        let mut slot: Vec<Option<FieldSlot>> = vec![None; self.grids.len()];
        let mut names = GridNames::default();
        for (c, chain) in self.chains.iter().enumerate() {
            let mut chain_names = Vec::new();
            for (p, name) in chain.iter().enumerate() {
                let Some(g) = index_of(name) else {
                    return Err(bad(format!(
                        "chain `{}` names `{name}`, which is not a grid of the loop",
                        chain.join(" -> ")
                    )));
                };
                if matches!(self.grids[g].1, LoopGrid::Read(_)) {
                    return Err(bad(format!(
                        "`{name}` rotates; give it with `grid` (mutably), not `input`"
                    )));
                }
                if slot[g].is_some() {
                    return Err(bad(format!("`{name}` is named twice in the rotation")));
                }
                slot[g] = Some(FieldSlot::Chain {
                    chain: c,
                    position: p,
                });
                chain_names.push(name.clone());
            }
            if chain.len() < 2 {
                return Err(bad(format!(
                    "chain `{}`: a chain names the grid a step writes and at least one it \
                     becomes",
                    chain.join(" -> ")
                )));
            }
            names.chains.push(chain_names);
        }
        // Each stage's fields resolved to loop grids by name.
        let mut stages = Vec::new();
        for (s, stage) in self.stages.iter().enumerate() {
            let kernel = stage.stencil.kernel();
            let who = format!("stage `{}` (kernel `{}`)", stage.name, kernel.name);
            if kernel.n_dims != D {
                return Err(Error::new(
                    ErrorKind::DimensionMismatch,
                    format!(
                        "{who} is {}-D but the loop's grids are {D}-D",
                        kernel.n_dims
                    ),
                ));
            }
            for (field, _) in &stage.bindings {
                if kernel.field_by_name(field).is_none() {
                    return Err(bad(format!("{who} has no grid `{field}` to bind")));
                }
                if stage.bindings.iter().filter(|(f, _)| f == field).count() > 1 {
                    return Err(bad(format!("{who}: grid `{field}` is bound twice")));
                }
            }
            let mut grids = Vec::new();
            for field in &kernel.fields {
                let grid = stage
                    .bindings
                    .iter()
                    .find(|(f, _)| *f == field.name)
                    .map_or(field.name.as_str(), |(_, g)| g.as_str());
                let Some(g) = index_of(grid) else {
                    return Err(bad(format!(
                        "{who}: its grid `{}` is bound to `{grid}`, which is not a grid of the \
                         loop (give it with `grid` or `input`, or bind the field to another \
                         with `Stage::bind`)",
                        field.name
                    )));
                };
                if field.role == Role::Output && slot[g].is_none() {
                    if matches!(self.grids[g].1, LoopGrid::Read(_)) {
                        return Err(bad(format!(
                            "{who} writes `{grid}`, which was given with `input`: give it with \
                             `grid` (mutably)"
                        )));
                    }
                    slot[g] = Some(FieldSlot::Lone(names.lone.len()));
                    names.lone.push(grid.to_string());
                }
                grids.push(g);
            }
            for (name, _) in &stage.params {
                if kernel.param_by_name(name).is_none() {
                    return Err(bad(format!("{who} has no parameter `{name}`")));
                }
            }
            let mut params = Vec::new();
            for p in &kernel.params {
                let mut given = stage.params.iter().filter(|(n, _)| *n == p.name);
                match (given.next(), given.next()) {
                    (Some(&(_, v)), None) => params.push(v),
                    (None, _) => {
                        return Err(bad(format!("{who}: parameter `{}` is not set", p.name)));
                    }
                    (Some(_), Some(_)) => {
                        return Err(bad(format!("{who}: parameter `{}` is set twice", p.name)));
                    }
                }
            }
            stages.push(ResolvedStage {
                index: s,
                grids,
                params,
            });
        }
        for (g, (name, _)) in self.grids.iter().enumerate() {
            if slot[g].is_none() {
                slot[g] = Some(FieldSlot::Coefficient(names.coefficients.len()));
                names.coefficients.push(name.clone());
            }
        }
        let slot: Vec<FieldSlot> = slot
            .into_iter()
            .map(|s| s.expect("every grid placed"))
            .collect();
        // Halos current for every grid a stage reads.
        for stage in &stages {
            let fields = &self.stages[stage.index].stencil.kernel().fields;
            for (field, &g) in fields.iter().zip(&stage.grids) {
                if field.role == Role::Input && grid_of(&self.grids[g].1).halo_is_stale() {
                    return Err(Error::new(
                        ErrorKind::StaleHalo,
                        format!(
                            "the interior of `{}` changed since its halo was filled and its \
                             boundary conditions depend on the interior; call `update_halo()` \
                             on it first",
                            self.grids[g].0
                        ),
                    ));
                }
            }
        }
        Ok(Resolved {
            names,
            slot,
            stages,
        })
    }
}
