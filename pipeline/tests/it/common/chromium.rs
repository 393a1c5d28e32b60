//! Debian's headless Chromium (`/usr/bin/chromium`, or `$MCPBENCH_CHROMIUM`; installed by
//! `.ci/test-tools`) driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`), for
//! the tests that check what a person sees in a browser. A missing browser fails the test, naming
//! `.ci/test-tools`; it is never skipped.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub fn chromium() -> PathBuf {
    let path = std::env::var_os("MCPBENCH_CHROMIUM").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(path.is_file(), "{} is missing: run .ci/test-tools (it installs Debian's chromium), or set MCPBENCH_CHROMIUM", path.display());
    path
}

// ---------------------------------------------------------------------------------------------
// The DevTools protocol over a pipe: JSON messages separated by NUL bytes on fds 3 (to the
// browser) and 4 (from it), here two FIFOs a shell hands the browser.

pub struct Browser {
    child: Child,
    to: std::fs::File,
    from: Receiver<Value>,
    next: u64,
    /// Every event received so far (responses are returned, not kept).
    pub events: Vec<Value>,
    /// The page target's session.
    session: String,
}

pub const WAIT: Duration = Duration::from_secs(30);

impl Browser {
    pub fn start(profile: &Path) -> Self {
        let (to, from) = (profile.join("to-browser"), profile.join("from-browser"));
        for fifo in [&to, &from] {
            nix::unistd::mkfifo(fifo.as_path(), nix::sys::stat::Mode::S_IRWXU).unwrap();
        }
        let child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --remote-debugging-pipe --user-data-dir="$1" about:blank 3<"$2" 4>"$3""#)
            .arg(chromium())
            .arg(profile.join("profile"))
            .arg(&to)
            .arg(&from)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Opening a FIFO blocks until its other end is opened: done aside, so a browser that
        // never starts fails the test instead of hanging it.
        let (tx, rx) = channel();
        let (to2, from2) = (to.clone(), from.clone());
        std::thread::spawn(move || {
            let w = std::fs::OpenOptions::new().write(true).open(&to2);
            let r = std::fs::File::open(&from2);
            let _ = tx.send(w.and_then(|w| r.map(|r| (w, r))));
        });
        let (writer, mut reader) = match rx.recv_timeout(WAIT) {
            Ok(Ok(pair)) => pair,
            other => panic!("chromium did not open its DevTools pipe: {other:?}"),
        };
        let (tx, from) = channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            while let Ok(n) = reader.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|b| *b == 0) {
                    let msg: Vec<u8> = buf.drain(..=end).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg[..msg.len() - 1])
                        && tx.send(v).is_err()
                    {
                        return;
                    }
                }
            }
        });
        let mut b = Browser { child, to: writer, from, next: 0, events: Vec::new(), session: String::new() };
        let targets = b.call("Target.getTargets", json!({}), false);
        let page = targets["targetInfos"].as_array().unwrap().iter().find(|t| t["type"] == "page").expect("a page target")["targetId"].clone();
        b.session = b.call("Target.attachToTarget", json!({"targetId": page, "flatten": true}), false)["sessionId"].as_str().unwrap().to_owned();
        b
    }

    /// Sends `method` (to the page's session when `page`) and returns its result.
    pub fn call(&mut self, method: &str, params: Value, page: bool) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if page {
            msg["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from.recv_timeout(left) {
                Ok(v) if v["id"] == id => {
                    assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                    return v["result"].clone();
                }
                Ok(v) => self.events.push(v),
                Err(RecvTimeoutError::Timeout) => panic!("{method}: no answer in {WAIT:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("{method}: the browser went away"),
            }
        }
    }

    /// Waits for the event `method` after the first `seen` events.
    pub fn wait_for(&mut self, method: &str, seen: usize) {
        let deadline = Instant::now() + WAIT;
        while !self.events[seen.min(self.events.len())..].iter().any(|e| e["method"] == method) {
            match self.from.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(v) => self.events.push(v),
                Err(e) => panic!("waiting for {method}: {e:?}"),
            }
        }
    }

    /// Evaluates `js` in the page and returns its value.
    pub fn eval(&mut self, js: &str) -> Value {
        let r = self.call("Runtime.evaluate", json!({"expression": js, "returnByValue": true, "awaitPromise": true}), true);
        assert!(r.get("exceptionDetails").is_none(), "{js}: {}", r["exceptionDetails"]);
        r["result"]["value"].clone()
    }

    /// Evaluates `js` every 100 ms until it returns something truthy (not false, null, 0 or
    /// ""), and returns that; fails with the last value after `timeout`.
    pub fn wait_until(&mut self, what: &str, js: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let v = self.eval(js);
            let truthy = !(v.is_null() || v == json!(false) || v == json!(0) || v == json!(""));
            if truthy {
                return v;
            }
            assert!(Instant::now() < deadline, "{what}: not after {timeout:?} (last: {v})");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn navigate(&mut self, url: &str) {
        let seen = self.events.len();
        self.call("Page.navigate", json!({"url": url}), true);
        self.wait_for("Page.loadEventFired", seen);
    }

    pub fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        let scale = if mobile { 2 } else { 1 };
        self.call("Emulation.setDeviceMetricsOverride", json!({"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile}), true);
    }

    /// A real mouse click at the centre of the element `selector` finds.
    pub fn click(&mut self, selector: &str) {
        let js = format!(
            "(function(){{var e=document.querySelector({selector:?});e.scrollIntoView({{block:'center'}});var r=e.getBoundingClientRect();return [r.x+r.width/2,r.y+r.height/2];}})()"
        );
        let at = self.eval(&js);
        let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call("Input.dispatchMouseEvent", json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}), true);
        }
    }

    pub fn screenshot(&mut self, path: &Path) -> Vec<u8> {
        let r = self.call("Page.captureScreenshot", json!({"format": "png", "captureBeyondViewport": false}), true);
        let png = base64_decode(r["data"].as_str().unwrap());
        std::fs::write(path, &png).unwrap();
        png
    }

    /// The URL of every request the page made.
    pub fn requests(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .map(|e| e["params"]["request"]["url"].as_str().unwrap_or("").to_owned())
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let mut bytes = serde_json::to_vec(&json!({"id": 0, "method": "Browser.close"})).unwrap();
        bytes.push(0);
        let _ = self.to.write_all(&bytes);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let clean: Vec<u8> = s.bytes().filter(|c| *c != b'=' && !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let v: Vec<u32> = chunk.iter().map(|c| value(*c) as u32).collect();
        let n = v.iter().enumerate().fold(0u32, |acc, (i, x)| acc | (x << (18 - 6 * i)));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// A PNG's width and height, from its IHDR chunk.
pub fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    (u32::from_be_bytes(png[16..20].try_into().unwrap()), u32::from_be_bytes(png[20..24].try_into().unwrap()))
}
