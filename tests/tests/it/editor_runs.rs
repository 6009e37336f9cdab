//! Runs in the editor, in headless Chromium: cancel, the timeline, a node's input and
//! output, comparing runs, and running from a node.
