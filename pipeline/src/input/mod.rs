//! The two front doors of a run: the flags of `pipeline --mcp … --k 3` ([`flags`]) and the
//! experiment spec of `pipeline run SPEC` ([`spec`]). Both are parsed and validated here, and
//! lowered into a [`crate::plan::RunPlan`] by [`crate::plan`]; nothing downstream reads them.

pub mod flags;
pub mod spec;
