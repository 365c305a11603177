//! Analyses of the IR, written once here and read by the macro, the backends and the tuner.
//!
//! - [`radius`]: how far a kernel reads, per dimension and direction (every read, live or not:
//!   it sizes halos);
//! - [`liveness`]: which expressions and temporaries the stores depend on;
//! - [`footprint`]: the distinct offsets each input is read at (live reads);
//! - [`flops_per_point`], [`bytes_per_point`]: arithmetic and compulsory traffic per point,
//!   for rooflines;
//! - [`features`]: GSTuner's stencil features (Table 2 of Sun et al.), for performance models.
//!
//! All assume a verified kernel.

mod cost;
mod features;
mod footprint;
mod live;
mod radius;
#[cfg(test)]
mod tests;

pub use cost::{bytes_per_point, flops_per_point};
pub use features::{N_ORDERS, N_STEPS, StencilFeatures, features};
pub use footprint::{Footprint, InputFootprint, footprint, in_place_outputs};
pub use live::{Liveness, liveness};
pub use radius::{Radius, field_radius, radius};
