//! Auto-layout of a conclave: a layered left-to-right placement of its nodes.
