//! The field builder and the lowering preview in headless Chromium, typed into with
//! real keystrokes.
