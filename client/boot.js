// Starts the editor: loads the wasm module. A file of its own, not an inline script,
// so the page's Content-Security-Policy can forbid inline script.
import init from "/conclave-client.js";
init("/conclave-client_bg.wasm");
