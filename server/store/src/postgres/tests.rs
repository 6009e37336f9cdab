//! Tests of the PostgreSQL store.
