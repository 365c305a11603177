//! GPU time loops: every step on the device (or in the emulator's memory), grids uploaded
//! once and downloaded once, and pairs of steps fused into one launch where the rotation
//! allows it ([`GpuSchedule::time_steps`] = 2, see `codegen::fused`).
//!
//! The driver keeps, per chain of the rotation, a *ring*: which buffer holds each chain
//! position's values now (position 0: the buffer the next step writes). A plain step launches
//! the kernel with each field bound to its position's buffer, fills the halo of the buffer it
//! wrote from that buffer's boundary conditions (by the generated gather kernel, as
//! `DeviceGrid::update_halo`), and rotates the ring: the written buffer becomes position 1,
//! the oldest becomes the next target. A fused launch (a ping-pong `out -> u` only) reads
//! position 1 and writes two steps later into position 0's buffer, skipping the middle step's
//! storage; the ring rotates the same way. The loop ends with one or two plain steps, so both
//! buffers of the pair end holding the two newest steps, as plain steps leave them.
//!
//! Fused launches need: one chain of two grids, no other output, no merged points, a grown
//! tile that fits the block's shared memory, and both grids with every face constant
//! (`Dirichlet` or `UserManaged`), the same faces, and their constant halos filled (so the
//! middle step's halo, which the fused kernel reads from the target buffer, holds what a
//! plain step would have written there). Otherwise every step is plain.

use stencil_core::grid::Boundary;
use stencil_core::schedule::GpuSchedule;
use stencil_core::time_loop::FieldSlot;
use stencil_core::{Element, Error, ErrorKind, Geometry, Result, TimeLoop};

use crate::codegen::{self, FusedPair, GeneratedKernel, halo::HaloPlan};

/// Where a GPU time loop's buffers live: device memory, or the emulator's.
pub(crate) trait StepMemory<T: Element> {
    /// A buffer holding `data` (a whole grid's storage); its index.
    fn upload(&mut self, data: &[T]) -> Result<usize>;
    /// Launches `generated` with one buffer per kernel field (declaration order) and the
    /// parameters.
    fn launch(
        &mut self,
        generated: &GeneratedKernel,
        buffers: &[usize],
        params: &[T],
    ) -> Result<()>;
    /// Applies halo `plan` to buffer `buffer` (a buffer's plan is the same on every call, so
    /// an implementation may keep what it made of it).
    fn fill_halo(&mut self, buffer: usize, plan: &HaloPlan<T>) -> Result<()>;
    /// Copies buffer `buffer` into `data` (waiting for the launches before).
    fn download(&mut self, buffer: usize, data: &mut [T]) -> Result<()>;
}

/// The launches of `steps` steps: `true` for a fused pair. With fusion and at least 3 steps,
/// `(steps - 1) / 2` pairs and then the one or two steps left, plain; otherwise every step
/// plain.
pub(crate) fn launch_plan(steps: usize, fused: bool) -> Vec<bool> {
    if !fused || steps < 3 {
        return vec![false; steps];
    }
    let pairs = (steps - 1) / 2;
    let mut plan = vec![true; pairs];
    plan.extend(std::iter::repeat_n(false, steps - 2 * pairs));
    plan
}

/// The ping-pong pair of `job` when `schedule` asks for fused steps and the job allows them
/// (see the module documentation).
pub(crate) fn fused_pair<T: Element>(
    job: &TimeLoop<'_, T>,
    schedule: &GpuSchedule,
) -> Option<FusedPair> {
    let kernel = job.kernel();
    let chains = job.rotation().chains();
    if schedule.time_steps != 2 || schedule.merge != 1 || chains.len() != 1 || chains[0].len() != 2
    {
        return None;
    }
    // A fused launch computes two steps and the middle step's halo ring: it is given
    // neither step's number nor its points' indices.
    if kernel.outputs().count() != 1 || kernel.reads_step() || kernel.reads_indices() {
        return None;
    }
    let grids = &job.chains()[0];
    let constant =
        |faces: &[[Boundary<T>; 2]]| faces.iter().flatten().all(|b| !b.depends_on_interior());
    if !grids
        .iter()
        .all(|g| g.constant_faces_filled && constant(&g.faces))
        || grids[0].faces != grids[1].faces
    {
        return None;
    }
    Some(FusedPair {
        output: chains[0][0].index(),
        input: chains[0][1].index(),
    })
}

/// A time loop as the launches see it: where every field's values are (buffer indices of a
/// [`StepMemory`]) and what each buffer is.
pub(crate) struct Launches<T> {
    /// Per kernel field (declaration order): where it lives.
    pub(crate) slots: Vec<FieldSlot>,
    /// Per chain: the buffer of each position now (0: the next step's target).
    pub(crate) rings: Vec<Vec<usize>>,
    /// Buffers of the outputs outside the rotation.
    pub(crate) lone: Vec<usize>,
    /// Buffers of the read-only inputs.
    pub(crate) coefficients: Vec<usize>,
    /// Per buffer: its layout and the faces its fills write.
    pub(crate) geoms: Vec<Geometry>,
    pub(crate) faces: Vec<Vec<[Boundary<T>; 2]>>,
    /// Parameter values.
    pub(crate) params: Vec<T>,
    /// The pair fused launches advance, when they may.
    pub(crate) fused: Option<FusedPair>,
    /// The number of the first step `run` computes (what a kernel reads as `step()`).
    pub(crate) first_step: usize,
}

impl<T: Element> Launches<T> {
    /// The buffer a field of slot `slot` uses now.
    fn buffer(&self, slot: FieldSlot) -> usize {
        match slot {
            FieldSlot::Chain { chain, position } => self.rings[chain][position],
            FieldSlot::Lone(k) => self.lone[k],
            FieldSlot::Coefficient(k) => self.coefficients[k],
        }
    }

    /// Runs `steps` steps of `kernel` under `schedule` in `memory` (code for `sm_<arch>`),
    /// rotating the rings; afterwards `rings[c][p]` holds chain `c`'s position `p`.
    ///
    /// # Errors
    /// Generator and launch errors.
    pub(crate) fn run(
        &mut self,
        memory: &mut dyn StepMemory<T>,
        (kernel, arch): (&stencil_core::Kernel, u32),
        schedule: &GpuSchedule,
        steps: usize,
    ) -> Result<()> {
        let mut generated: std::collections::HashMap<(bool, Vec<Geometry>), GeneratedKernel> =
            Default::default();
        let mut plans: Vec<Option<HaloPlan<T>>> = vec![None; self.geoms.len()];
        // A fused kernel whose tile does not fit a block's shared memory: plain launches.
        if let Some(pair) = self.fused {
            let buffers: Vec<usize> = self.slots.iter().map(|&s| self.buffer(s)).collect();
            let field_geoms: Vec<Geometry> = buffers.iter().map(|&b| self.geoms[b]).collect();
            match codegen::generate_fused(kernel, schedule, &field_geoms, arch, pair) {
                Ok(code) => {
                    generated.insert((true, field_geoms), code);
                }
                Err(e) if e.kind() == ErrorKind::InvalidSchedule => self.fused = None,
                Err(e) => return Err(e),
            }
        }
        let mut step = self.first_step;
        for fuse in launch_plan(steps, self.fused.is_some()) {
            let buffers: Vec<usize> = self.slots.iter().map(|&s| self.buffer(s)).collect();
            let field_geoms: Vec<Geometry> = buffers.iter().map(|&b| self.geoms[b]).collect();
            let key = (fuse, field_geoms);
            if !generated.contains_key(&key) {
                let code = match self.fused {
                    Some(pair) if fuse => {
                        codegen::generate_fused(kernel, schedule, &key.1, arch, pair)?
                    }
                    _ => codegen::generate(
                        kernel,
                        schedule,
                        &key.1,
                        arch,
                        codegen::CodegenOptions::default(),
                    )?,
                };
                generated.insert(key.clone(), code);
            }
            let mut params = self.params.clone();
            params.extend(codegen::step_argument::<T>(kernel, step as u64));
            memory.launch(&generated[&key], &buffers, &params)?;
            step += if fuse { 2 } else { 1 };
            // The halo of every buffer this launch wrote (skipped where it cannot change).
            let written: Vec<usize> = self
                .rings
                .iter()
                .map(|r| r[0])
                .chain(self.lone.iter().copied())
                .collect();
            for b in written {
                if plans[b].is_none() {
                    plans[b] = Some(HaloPlan::from_geometry(self.geoms[b], &self.faces[b])?);
                }
                let plan = plans[b].as_ref().expect("built above");
                if !plan.copy_dst.is_empty() || !plan.const_dst.is_empty() {
                    memory.fill_halo(b, plan)?;
                }
            }
            for ring in &mut self.rings {
                ring.rotate_right(1);
            }
        }
        Ok(())
    }
}

/// Runs `steps` steps of `job` under `schedule` in `memory` (code for `sm_<arch>`): uploads
/// every grid, launches, downloads every grid the loop wrote into the grid that must hold it,
/// and counts the steps in `job`.
///
/// # Errors
/// Generator, launch and transfer errors (the job then counts no step; its grids keep what
/// they held).
pub(crate) fn drive<T: Element>(
    memory: &mut dyn StepMemory<T>,
    arch: u32,
    job: &mut TimeLoop<'_, T>,
    schedule: &GpuSchedule,
    steps: usize,
) -> Result<()> {
    if steps == 0 {
        return Ok(());
    }
    let kernel = job.kernel();
    let done = job.done();
    let mut launches = Launches {
        slots: job.slots().to_vec(),
        rings: Vec::new(),
        lone: Vec::new(),
        coefficients: Vec::new(),
        geoms: Vec::new(),
        faces: Vec::new(),
        params: job.params().to_vec(),
        fused: fused_pair(job, schedule),
        first_step: job.first_step() + done,
    };
    let mut add = |l: &mut Launches<T>, data: &[T], geom: Geometry, faces: Vec<_>| {
        l.geoms.push(geom);
        l.faces.push(faces);
        memory.upload(data)
    };
    for chain in job.chains() {
        let len = chain.len();
        let mut ring = Vec::with_capacity(len);
        for p in 0..len {
            // Position p reads or writes grid `grid_index(c, p, done)`.
            let grid = &chain[(p + len - done % len) % len];
            ring.push(add(
                &mut launches,
                grid.view.data,
                grid.view.geom,
                grid.fill_faces(),
            )?);
        }
        launches.rings.push(ring);
    }
    for grid in job.lone() {
        let b = add(
            &mut launches,
            grid.view.data,
            grid.view.geom,
            grid.fill_faces(),
        )?;
        launches.lone.push(b);
    }
    for view in job.coefficients() {
        let b = add(&mut launches, view.data, view.geom, Vec::new())?;
        launches.coefficients.push(b);
    }
    launches.run(memory, (kernel, arch), schedule, steps)?;
    // Every chain grid and lone output to the grid that must hold it after the steps.
    let total = done + steps;
    let (chains, lone_grids) = job.grids_mut();
    for (ring, chain) in launches.rings.iter().zip(chains.iter_mut()) {
        let len = chain.len();
        for (p, &buffer) in ring.iter().enumerate() {
            let grid = &mut chain[(p + len - total % len) % len];
            memory.download(buffer, grid.view.data)?;
            // Positions 1..=min(steps, L - 1), and 0 after L steps, hold written steps.
            if (1..=steps.min(len - 1)).contains(&p) || (p == 0 && steps >= len) {
                grid.constant_faces_filled = true;
            }
        }
    }
    for (&buffer, grid) in launches.lone.iter().zip(lone_grids.iter_mut()) {
        memory.download(buffer, grid.view.data)?;
        grid.constant_faces_filled = true;
    }
    job.advance(steps);
    Ok(())
}

/// An error for a schedule a GPU time loop cannot run.
pub(crate) fn not_gpu(schedule: &stencil_core::Schedule) -> Error {
    Error::new(
        ErrorKind::InvalidSchedule,
        format!("a GPU time loop runs GPU schedules, not {schedule:?}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_fuse_pairs_and_end_with_one_or_two_plain_steps() {
        assert_eq!(launch_plan(0, true), Vec::<bool>::new());
        assert_eq!(launch_plan(2, true), [false, false]);
        assert_eq!(launch_plan(3, true), [true, false]);
        assert_eq!(launch_plan(4, true), [true, false, false]);
        assert_eq!(launch_plan(7, true), [true, true, true, false]);
        assert_eq!(launch_plan(5, false), [false; 5]);
    }
}
