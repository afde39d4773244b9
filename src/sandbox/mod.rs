//! Confinement of the wrapped server: Landlock rules derived from the roots and policy,
//! applied in the child only, and an honest enforcement report.
//!
//! Owned by issue 7.
