//! stencil facade (in progress).
