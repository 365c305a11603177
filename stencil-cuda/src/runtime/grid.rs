//! [`DeviceGrid`]: a grid resident in device memory (upload once, many sweeps, download when
//! asked), and its halo fill on the device by the generated gather kernel.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use stencil_core::grid::{Boundary, Grid};
use stencil_core::{Error, ErrorKind, Geometry, Result};

use super::{CudaDevice, GpuElement, driver_error};
use crate::codegen::{self, halo::HaloPlan};

/// A halo plan and its index and value arrays in device memory.
#[derive(Debug)]
pub(super) struct DeviceHaloPlan<T: GpuElement> {
    plan: HaloPlan<T>,
    copy_dst: CudaSlice<u32>,
    copy_src: CudaSlice<u32>,
    const_dst: CudaSlice<u32>,
    const_val: CudaSlice<T>,
}

/// A grid resident in device memory: upload once, run many sweeps, download when asked.
#[derive(Debug)]
pub struct DeviceGrid<T: GpuElement, const D: usize> {
    pub(super) device: Arc<CudaDevice>,
    pub(super) data: CudaSlice<T>,
    pub(super) geom: Geometry,
    pub(super) shape: [usize; D],
    pub(super) boundaries: [[Boundary<T>; 2]; D],
    pub(super) halo: Option<DeviceHaloPlan<T>>,
}

impl<T: GpuElement, const D: usize> DeviceGrid<T, D> {
    /// Interior shape.
    pub fn shape(&self) -> [usize; D] {
        self.shape
    }

    /// Layout of the storage.
    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }

    /// Replaces the device data with `grid`'s storage (same geometry), without reallocating;
    /// the boundary conditions become `grid`'s.
    ///
    /// # Errors
    /// [`ErrorKind::ShapeMismatch`] for a grid of another geometry; driver errors.
    pub fn copy_from(&mut self, grid: &Grid<T, D>) -> Result<()> {
        if *grid.geometry() != self.geom {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "upload from a grid of another shape or halo",
            ));
        }
        if *grid.boundaries() != self.boundaries {
            self.boundaries = *grid.boundaries();
            self.halo = None;
        }
        self.device
            .stream
            .memcpy_htod(grid.as_slice(), &mut self.data)
            .map_err(driver_error("upload"))
    }

    /// The device holding the grid.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.device
    }

    /// Copies the device storage into `grid` (same geometry), waiting for pending work.
    ///
    /// # Errors
    /// [`ErrorKind::ShapeMismatch`] for a grid of another geometry; driver errors.
    pub fn download_into(&self, grid: &mut Grid<T, D>) -> Result<()> {
        if *grid.geometry() != self.geom {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                "download into a grid of another shape or halo",
            ));
        }
        self.device
            .stream
            .memcpy_dtoh(&self.data, grid.as_mut_slice())
            .map_err(driver_error("download"))?;
        self.device.synchronize()
    }

    /// A new host grid holding the device data, with this grid's boundary conditions.
    ///
    /// # Errors
    /// As [`download_into`](Self::download_into).
    pub fn download(&self) -> Result<Grid<T, D>> {
        let mut g = Grid::<T, D>::with_padding(self.shape, self.geom.halo, self.geom.pad_lines)?;
        g.set_boundary(Boundary::UserManaged);
        self.download_into(&mut g)?;
        Ok(g)
    }

    /// Fills the halo on the device from the grid's boundary conditions (those it had when
    /// uploaded), with the same result as the host's `Grid::update_halo`.
    ///
    /// # Errors
    /// Generator and driver errors.
    pub fn update_halo(&mut self) -> Result<()> {
        if self.halo.is_none() {
            // The plan of this grid's own layout (padded rows included).
            let plan = HaloPlan::from_geometry(self.geom, &self.boundaries)?;
            self.halo = Some(DeviceHaloPlan::upload(&self.device, plan)?);
        }
        let halo = self.halo.as_ref().expect("plan built above");
        halo.apply(&self.device, &mut self.data)
    }
}

impl<T: GpuElement> DeviceHaloPlan<T> {
    /// `plan` with its index and value arrays uploaded to `device`.
    ///
    /// # Errors
    /// Driver errors.
    pub(super) fn upload(device: &CudaDevice, plan: HaloPlan<T>) -> Result<Self> {
        let s = &device.stream;
        let upload = |v: &[u32]| s.clone_htod(v).map_err(driver_error("upload"));
        Ok(DeviceHaloPlan {
            copy_dst: upload(&plan.copy_dst)?,
            copy_src: upload(&plan.copy_src)?,
            const_dst: upload(&plan.const_dst)?,
            const_val: s
                .clone_htod(&plan.const_val)
                .map_err(driver_error("upload"))?,
            plan,
        })
    }

    /// Fills the halo of `data`, a grid of the plan's layout, with the gather kernel.
    ///
    /// # Errors
    /// Generator and driver errors.
    pub(super) fn apply(&self, device: &CudaDevice, data: &mut CudaSlice<T>) -> Result<()> {
        let arrays = (
            &self.copy_dst,
            &self.copy_src,
            &self.const_dst,
            &self.const_val,
        );
        device.launch_gather(data, arrays, &self.plan)
    }
}

impl CudaDevice {
    /// Launches the halo gather kernel on `data` with `plan`'s arrays in device memory.
    pub(super) fn launch_gather<T: GpuElement>(
        &self,
        data: &mut CudaSlice<T>,
        (copy_dst, copy_src, const_dst, const_val): (
            &CudaSlice<u32>,
            &CudaSlice<u32>,
            &CudaSlice<u32>,
            &CudaSlice<T>,
        ),
        plan: &HaloPlan<T>,
    ) -> Result<()> {
        let function = {
            let mut functions = self
                .halo_functions
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let std::collections::hash_map::Entry::Vacant(slot) = functions.entry(T::ELEM) {
                let generated = codegen::halo::generate_gather(T::ELEM, self.caps.arch());
                let module = self
                    .ctx
                    .load_module(Ptx::from_src(generated.to_string()))
                    .map_err(driver_error("loading the halo kernel"))?;
                let function = module
                    .load_function(codegen::halo::gather_entry_name(T::ELEM))
                    .map_err(driver_error("finding the halo kernel"))?;
                slot.insert(function);
            }
            functions[&T::ELEM].clone()
        };
        let n_copy = plan.copy_dst.len() as u32;
        let n_const = plan.const_dst.len() as u32;
        let total = n_copy + n_const;
        if total == 0 {
            return Ok(());
        }
        let config = LaunchConfig {
            grid_dim: (total.div_ceil(256), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut builder = self.stream.launch_builder(&function);
        builder
            .arg(data)
            .arg(copy_dst)
            .arg(copy_src)
            .arg(&n_copy)
            .arg(const_dst)
            .arg(const_val)
            .arg(&n_const);
        // SAFETY: the arguments match the gather entry's parameters (data pointer, copy
        // destination and source index arrays and their length, constant destinations and
        // values and their length); every index in the plan is below the grid's storage
        // length, computed from the grid's own geometry.
        unsafe { builder.launch(config) }.map_err(driver_error("halo launch"))?;
        Ok(())
    }
}
