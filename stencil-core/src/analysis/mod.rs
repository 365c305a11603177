//! Analyses of the IR, written once here and read by the macro, the backends and the tuner.

mod radius;

pub use radius::{Radius, radius};
