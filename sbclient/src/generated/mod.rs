//! Typed rows generated from the schemas in `schemas/` (see `codegen`).

#[rustfmt::skip]
pub mod ovn_sb;
#[rustfmt::skip]
pub mod vswitch;
