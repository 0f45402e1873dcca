//! The namespace controller (placeholder while it is assembled).

pub mod conditions;
pub mod decide;
