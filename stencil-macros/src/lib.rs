//! stencil-macros (in progress).
