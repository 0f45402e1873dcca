//! Dotted field paths into an object's JSON (being written).
