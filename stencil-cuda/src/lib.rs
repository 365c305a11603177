//! stencil-cuda (in progress).
