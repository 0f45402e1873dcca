//! Finish rules (being written).
