//! stencil-tune: the tuner (not built yet; this crate holds its place in the workspace).
//!
//! Planned (DESIGN.md section 7): search spaces that backends describe as plain data through
//! core's types, strategies (exhaustive, model-ordered neighbourhood search, genetic algorithm,
//! random sampling), robust measurement, a roofline model, and a persistent, versioned tuning
//! cache keyed by the kernel's structural hash. It depends on stencil-core only and never names
//! a backend.
//!
//! Today it exports nothing: `Launch::run` uses each backend's default schedule.
