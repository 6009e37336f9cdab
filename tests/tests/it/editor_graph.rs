//! Graph editing in headless Chromium: new conclaves, port-to-port edges, selection,
//! clipboard, keyboard, layout and the minimap, with real pointer events and keys.
