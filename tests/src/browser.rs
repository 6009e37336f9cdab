//! A headless Chromium session on the editor, served by a real server (the testbed
//! CLI, so runs can use the fake provider): start it, find elements by test id, drag
//! with pointer events, and read the API. Used by the browser tests and the editor
//! benchmark. Needs the editor built (scripts/build-editor.sh) and Debian's chromium
//! and chromium-driver (scripts/setup.sh).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use thirtyfour::prelude::*;

use conclave_testkit::TempWorkspace;

/// The repository root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("parent").to_path_buf()
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// A child process killed when dropped.
#[derive(Debug)]
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A browser on the editor.
#[derive(Debug)]
pub struct Editor {
    /// The WebDriver session.
    pub driver: WebDriver,
    /// The server's base URL.
    pub base: String,
    /// The URL the server printed, with its token: what a user opens.
    pub url: String,
    /// The server's token, for the tests' own API calls.
    pub token: String,
    /// The server's workspace (conclaves, database).
    pub ws: TempWorkspace,
    _server: Killed,
    _driver_process: Killed,
    _profile: tempfile::TempDir,
}

/// How long a browser test waits for something before it fails. Generous: the
/// deadline only matters when the test fails, and on a busy machine (other test
/// binaries building or running a model beside this one) a review run through the
/// server can take many times its quiet-machine time.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Polls `check` until it holds ([`PATIENCE`] at most).
pub async fn wait_until<F: Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + PATIENCE;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Elements with this `data-testid`.
pub fn tid(name: &str) -> By {
    By::Css(format!("[data-testid='{name}']"))
}

/// The node card with this id.
pub fn node(id: &str) -> By {
    By::Css(format!("[data-testid='node'][data-node-id='{id}']"))
}

impl Editor {
    /// Starts the server (`server_binary`, the conclave CLI) in a temporary workspace,
    /// chromedriver and a browser on the editor built into the server.
    pub async fn start(server_binary: &Path) -> Editor {
        Editor::start_in(server_binary, None).await
    }

    /// As [`Editor::start`], with the server started in `dir` instead of the workspace
    /// (its run database stays in the workspace).
    pub async fn start_in(server_binary: &Path, dir: Option<&Path>) -> Editor {
        Editor::start_with(server_binary, dir, &[]).await
    }

    /// As [`Editor::start_in`], with `env` set for the server (a provider's base URL).
    pub async fn start_with(server_binary: &Path, dir: Option<&Path>, env: &[(&str, String)]) -> Editor {
        Editor::start_serving(server_binary, dir, env, &[]).await
    }

    /// As [`Editor::start_with`], with more arguments for `serve` (`--allow-commands`).
    pub async fn start_serving(
        server_binary: &Path,
        dir: Option<&Path>,
        env: &[(&str, String)],
        args: &[&str],
    ) -> Editor {
        assert!(
            workspace_root().join("client/dist/index.html").is_file(),
            "the editor is not built: run `bash scripts/build-editor.sh` before building (scripts/test.sh does)"
        );
        let chromedriver = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        assert!(
            Path::new(&chromedriver).is_file(),
            "{chromedriver} is missing: run `bash scripts/setup.sh`, which installs chromium and chromium-driver"
        );
        let ws = TempWorkspace::new().expect("workspace");
        let (server_port, driver_port) = (free_port(), free_port());
        let mut server = Command::new(server_binary)
            .args(["serve", "--bind", &format!("127.0.0.1:{server_port}")])
            .args(["--repo-root", "/"])
            .args(args)
            .current_dir(dir.unwrap_or(ws.root()))
            .env("CONCLAVE_DB", ws.db())
            .env_remove("CONCLAVE_TOKEN")
            .env_remove("CONCLAVE_EDITOR_DIR")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stderr(Stdio::piped())
            .spawn()
            .expect("server starts");
        // The URL the server prints, with its token, is the one a user opens.
        let mut banner = String::new();
        let stderr = server.stderr.take().expect("stderr");
        let mut reader = std::io::BufReader::new(stderr);
        while !banner.contains("#token=") {
            banner.clear();
            if std::io::BufRead::read_line(&mut reader, &mut banner).unwrap_or(0) == 0 {
                panic!("the server printed no URL with a token");
            }
        }
        std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        let url = banner.split_whitespace().find(|w| w.starts_with("http://")).expect("a URL").to_string();
        let token = url.split_once("#token=").map(|(_, t)| t.to_string()).expect("a token");
        let base = format!("http://127.0.0.1:{server_port}");
        let driver_process = Command::new(&chromedriver)
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let probe = base.clone();
        wait_until("the server", || {
            let probe = probe.clone();
            async move { reqwest::get(format!("{probe}/api/openapi.json")).await.is_ok() }
        })
        .await;
        wait_until("chromedriver", || async move { std::net::TcpStream::connect(("127.0.0.1", driver_port)).is_ok() })
            .await;
        let profile = tempfile::tempdir().expect("profile dir");
        let mut caps = DesiredCapabilities::chrome();
        caps.set_binary("/usr/bin/chromium").expect("binary");
        for arg in [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1440,900",
            &format!("--user-data-dir={}", profile.path().display()),
        ] {
            caps.add_arg(arg).expect("arg");
        }
        let driver = WebDriver::new(format!("http://127.0.0.1:{driver_port}"), caps).await.expect("a browser session");
        driver.goto(&url).await.expect("page loads");
        let editor = Editor {
            driver,
            base,
            url,
            token,
            ws,
            _server: Killed(server),
            _driver_process: Killed(driver_process),
            _profile: profile,
        };
        editor.find(tid("canvas").clone()).await.ok();
        editor.wait_for(tid("palette-agent")).await;
        editor
    }

    /// The first element matching `by`, now.
    pub async fn find(&self, by: By) -> WebDriverResult<WebElement> {
        self.driver.find(by).await
    }

    /// The first element matching `by`, waiting up to [`PATIENCE`].
    pub async fn wait_for(&self, by: By) -> WebElement {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Ok(el) = self.driver.find(by.clone()).await {
                return el;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {by:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// How many elements match `by`.
    pub async fn count(&self, by: By) -> usize {
        self.driver.find_all(by).await.map(|v| v.len()).unwrap_or(0)
    }

    /// Presses the pointer on `from`, moves it over `to` (offset from its center), and releases.
    pub async fn drag(&self, from: &WebElement, to: &WebElement, dx: i64, dy: i64) {
        self.driver
            .action_chain()
            .move_to_element_center(from)
            .click_and_hold()
            .move_by_offset(5, 5)
            .move_to_element_with_offset(to, dx, dy)
            .release()
            .perform()
            .await
            .expect("drag");
    }

    /// Drags a palette item onto the canvas, offset from its center.
    pub async fn drop_on_canvas(&self, palette: &str, dx: i64, dy: i64) {
        let item = self.wait_for(tid(palette)).await;
        let canvas = self.wait_for(tid("canvas")).await;
        self.drag(&item, &canvas, dx, dy).await;
    }

    /// Draws an edge from `from`'s output port to `to`'s input port.
    pub async fn connect(&self, from: &str, to: &str) {
        let out = self.wait_for(node(from)).await.find(tid("port-out")).await.expect("out port");
        let input = self.wait_for(node(to)).await.find(tid("port-in")).await.expect("in port");
        self.drag(&out, &input, 0, 0).await;
    }

    /// The status bar's text.
    pub async fn status(&self) -> String {
        self.find(tid("status")).await.expect("status bar").text().await.unwrap_or_default()
    }

    /// Clears `input` and types `text` into it as a user does: a click, select-all and
    /// Backspace, then one key press per character. Nothing is set through JavaScript.
    pub async fn clear_and_type(&self, input: &WebElement, text: &str) {
        input.click().await.expect("focus the field");
        input.send_keys(Key::Control + "a").await.expect("select all");
        input.send_keys(Key::Backspace).await.expect("clear");
        for c in text.chars() {
            input.send_keys(c.to_string()).await.expect("typing");
        }
    }

    /// Clears the input `field` of field-builder row `row`, types `text` key by key,
    /// and leaves it with Tab, firing `change`.
    pub async fn type_into(&self, row: usize, field: &str, text: &str) {
        let rows = self.driver.find_all(tid("field-row")).await.expect("rows");
        let input = rows[row].find(tid(field)).await.expect("input");
        self.clear_and_type(&input, text).await;
        input.send_keys(Key::Tab).await.expect("leave the field");
        tokio::time::sleep(Duration::from_millis(150)).await;
    }

    /// GETs an API path as JSON.
    pub async fn api(&self, path: &str) -> Value {
        let request = reqwest::Client::new().get(format!("{}{path}", self.base)).bearer_auth(&self.token);
        request.send().await.expect("api").json().await.expect("json")
    }
}

/// Helpers for graph editing: conclaves made through the API, key chords, held drags.
impl Editor {
    /// Creates a conclave through the API (it must be valid) and returns it as stored.
    pub async fn create_conclave(&self, conclave: &Value) -> Value {
        let response = reqwest::Client::new()
            .post(format!("{}/api/conclaves", self.base))
            .bearer_auth(&self.token)
            .json(conclave)
            .send()
            .await
            .expect("create");
        assert_eq!(
            response.status().as_u16(),
            201,
            "creating {conclave}: {}",
            response.text().await.unwrap_or_default()
        );
        let id = conclave["id"].as_str().expect("an id");
        self.api(&format!("/api/conclaves/{id}")).await
    }

    /// Reloads the page and opens conclave `id` from the catalog.
    pub async fn open_conclave(&self, id: &str) {
        self.driver.refresh().await.expect("reload");
        let item = format!("[data-testid='conclave-item'][data-conclave-id='{id}']");
        self.wait_for(By::Css(item)).await.click().await.expect("open");
        self.wait_for(tid("canvas")).await;
    }

    /// Presses `key` while `modifier` is held, on whatever has focus.
    pub async fn chord(&self, modifier: Key, key: impl Into<TypingData>) {
        self.driver
            .action_chain()
            .key_down(modifier.clone())
            .send_keys(key)
            .key_up(modifier)
            .perform()
            .await
            .expect("key chord");
    }

    /// Presses and releases `key` on whatever has focus.
    pub async fn press(&self, key: impl Into<TypingData>) {
        self.driver.action_chain().send_keys(key).perform().await.expect("key press");
    }

    /// Clicks `element` with Shift held.
    pub async fn shift_click(&self, element: &WebElement) {
        self.driver
            .action_chain()
            .key_down(Key::Shift)
            .move_to_element_center(element)
            .click()
            .key_up(Key::Shift)
            .perform()
            .await
            .expect("shift-click");
    }

    /// Presses the pointer on `from` and moves it over `to` (offset from its center)
    /// without releasing it; [`Editor::release`] ends the drag.
    pub async fn hold_over(&self, from: &WebElement, to: &WebElement, dx: i64, dy: i64) {
        self.driver
            .action_chain()
            .move_to_element_center(from)
            .click_and_hold()
            .move_by_offset(5, 5)
            .move_to_element_with_offset(to, dx, dy)
            .perform()
            .await
            .expect("held drag");
    }

    /// Releases the pointer where it is.
    pub async fn release(&self) {
        self.driver.action_chain().release().perform().await.expect("release");
    }

    /// Clicks Save, waits until nothing is left unsaved, and returns conclave `id` as
    /// the server has it.
    pub async fn save_as(&self, id: &str) -> Value {
        self.find(tid("save")).await.expect("save").click().await.expect("click save");
        wait_until("the save", || async { self.count(By::Css(".toolbar .dirty.visible")).await == 0 }).await;
        self.api(&format!("/api/conclaves/{id}")).await
    }

    /// Where `element` is drawn on the screen, transforms included (a card on a
    /// zoomed canvas): x, y, width, height. WebDriver's own rect gives the size before
    /// transforms.
    pub async fn drawn_rect(&self, element: &WebElement) -> (f64, f64, f64, f64) {
        let script = "const r = arguments[0].getBoundingClientRect(); return [r.x, r.y, r.width, r.height];";
        let rect = self.driver.execute(script, vec![element.to_json().expect("element")]).await.expect("rect");
        let v: Vec<f64> = serde_json::from_value(rect.json().clone()).expect("four numbers");
        (v[0], v[1], v[2], v[3])
    }

    /// The ids of the selected node cards, in page order.
    pub async fn selected_nodes(&self) -> Vec<String> {
        let mut ids = Vec::new();
        for card in self.driver.find_all(By::Css("[data-testid='node'].selected")).await.unwrap_or_default() {
            ids.push(card.attr("data-node-id").await.ok().flatten().unwrap_or_default());
        }
        ids
    }
}
