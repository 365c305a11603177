//! stencil-core: the spine of the stencil workspace.
//!
//! - [`ir`]: the kernel IR, its [`KernelBuilder`], and the [`verify()`]er (one definition of a
//!   valid kernel, used by the macro at expansion time and at run time alike);
//! - [`analysis`]: footprint, radius, flops and bytes per point, stencil features;
//! - [`interp`]: the reference interpreter, the oracle every backend is checked against;
//! - [`grid`]: `Grid<T, D>` with halo, padding, alignment and boundary conditions;
//! - [`Stencil`], [`Job`], [`Backend`], [`Schedule`]: what backends implement and receive;
//!   [`Capabilities`]: what a backend computes beyond plain sweeps;
//! - [`row`]: the contract between macro-generated CPU code and CPU backends;
//! - [`reduce`]: the fixed order reductions combine in, and the result types;
//! - [`time_loop`]: time loops ([`TimeLoop`]: a kernel stepped with its grids rotating).
//!
//! This crate depends on no backend technology (no rayon, no CUDA, no syn).

pub mod analysis;
pub mod backend;
pub mod capabilities;
pub mod element;
pub mod error;
pub mod grid;
pub mod hash;
pub mod interp;
pub mod ir;
pub mod job;
pub mod loop_grids;
pub mod passes;
pub mod printer;
pub mod random;
pub mod reduce;
pub mod rng;
pub mod row;
pub mod schedule;
pub mod simplify;
pub mod sparse;
pub mod stages;
pub mod stencil;
pub mod time_loop;
pub mod verify;
pub mod view;

pub use backend::{Backend, check_support};
pub use capabilities::Capabilities;
pub use element::{ElemType, Element};
pub use error::{Error, ErrorKind, Result};
pub use grid::{Boundary, DEFAULT_HALO, Grid, Grid1, Grid2, Grid3, Grid4, Side};
pub use ir::{
    BinaryOp, CmpOp, Expr, ExprId, Field, FieldId, Kernel, KernelBuilder, LetId, LogicOp, MAX_DIMS,
    MAX_RADIUS, Offset, Param, ParamId, ReduceOp, Reduction, ReductionId, Role, Stmt, UnaryOp,
};
pub use job::Job;
pub use reduce::{Max, Min, ReductionTarget, Sum};
pub use schedule::{
    CacheSizes, CpuSchedule, CpuStores, DEFAULT_PREFETCH_ROWS, GpuSchedule, JAMMED_ROWS,
    PREFETCH_AUTO, Schedule, TuningSpace,
};
pub use stages::StageLoop;
pub use stencil::{CpuLoop, Stencil};
pub use time_loop::{Rotation, TimeLoop};
pub use verify::{Location, VerifyError, VerifyErrorKind, VerifyErrors, verify};
pub use view::{FieldView, FieldViewMut, Geometry};
