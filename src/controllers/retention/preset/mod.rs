//! The presets (being written).
