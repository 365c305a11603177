//! stencil-cpu (in progress).
