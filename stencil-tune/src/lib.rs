//! stencil-tune (in progress).
