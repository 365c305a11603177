//! Grids (in progress).
