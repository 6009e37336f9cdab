//! Test helpers shared by the workspace-level tests.
