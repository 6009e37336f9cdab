//! DevTools protocol commands sent to the browser through chromedriver, for the
//! browser tests and the editor benchmark: a throttled network with the cache off (the
//! first load as a user on a slow link has it), the `Accept-Encoding` the browser
//! sends, what each of the page's files took on the wire, and mouse wheel turns
//! (WebDriver's actions have no wheel here; DevTools sends it as real input).

use crate::browser::Editor;
use serde_json::{Value, json};

/// A network link as DevTools emulates it.
#[derive(Debug, Clone, Copy)]
pub struct Link {
    /// Bits per second, in each direction.
    pub bits_per_second: u64,
    /// Added to every request's round trip, in milliseconds.
    pub latency_ms: u64,
}

impl Editor {
    /// Sends DevTools command `method` with `params`, failing the caller on an error.
    pub async fn cdp(&self, method: &str, params: Value) -> Value {
        self.driver
            .cdp()
            .send_raw(method, params)
            .await
            .unwrap_or_else(|e| panic!("DevTools command {method} failed: {e}"))
    }

    /// Throttles every request of the tab to `link` and turns the browser's cache off.
    pub async fn throttle(&self, link: Link) {
        self.cdp("Network.enable", json!({})).await;
        self.cdp("Network.setCacheDisabled", json!({"cacheDisabled": true})).await;
        let bytes_per_second = link.bits_per_second / 8;
        let conditions = json!({
            "offline": false,
            "latency": link.latency_ms,
            "downloadThroughput": bytes_per_second,
            "uploadThroughput": bytes_per_second,
        });
        self.cdp("Network.emulateNetworkConditions", conditions).await;
    }

    /// Makes the browser send `Accept-Encoding: value` with every request of the tab
    /// (DevTools may set the header a page may not), with the cache off so that every
    /// file is fetched again with it.
    pub async fn accept_encoding(&self, value: &str) {
        self.cdp("Network.enable", json!({})).await;
        self.cdp("Network.setCacheDisabled", json!({"cacheDisabled": true})).await;
        self.cdp("Network.setExtraHTTPHeaders", json!({"headers": {"Accept-Encoding": value}})).await;
    }

    /// How many bytes of its body the server sent for each file of the page so far,
    /// by path, from the browser's resource timing: for an encoded file, the encoded
    /// size.
    pub async fn transferred(&self) -> Vec<(String, u64)> {
        let script =
            "return performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))
             .map(e => [new URL(e.name).pathname, e.encodedBodySize]);";
        let entries = self.driver.execute(script, Vec::new()).await.expect("resource timing").json().clone();
        let entry = |e: &Value| Some((e.get(0)?.as_str()?.to_string(), e.get(1)?.as_u64()?));
        entries.as_array().map(|v| v.iter().filter_map(entry).collect()).unwrap_or_default()
    }
}

/// Input the WebDriver actions cannot send.
impl Editor {
    /// Turns the mouse wheel by `delta_y` pixels (negative: away from the user, which
    /// zooms the canvas in) with the pointer at viewport point (`x`, `y`), as real
    /// input that reaches the page as a trusted `wheel` event.
    pub async fn wheel(&self, x: f64, y: f64, delta_y: f64) {
        let event = json!({"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": delta_y});
        self.cdp("Input.dispatchMouseEvent", event).await;
    }
}
