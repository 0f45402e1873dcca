//! [`Row`]: the counts of one category of the demo's objects, which the workload's summary and
//! the retention scene's report both tally.

/// Counts for one category of objects.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Objects in the category.
    pub total: usize,
    /// Expected to be deleted.
    pub expected_deleted: usize,
    /// Actually deleted.
    pub deleted: usize,
}
