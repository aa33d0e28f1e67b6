//! The `abridge serve` check of `cargo xtask e2e`: the Python client
//! example (standard library only) drives a live service started from the
//! release binary. It replays a real pi session under a small window
//! with the model-free digest method, so no model is needed; then the
//! service is stopped with SIGTERM and must exit cleanly.

use std::io::BufRead;
use std::io::BufReader;
use std::path::Path;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use anyhow::bail;
use anyhow::ensure;

/// The real session the client replays.
const SAMPLE: &str = "assets/sessions/pi-mono__large-session.jsonl";
/// The window the client compacts under: small enough that Maintenance
/// fires many times over the sample.
const WINDOW: u64 = 32_000;
const TOKEN: &str = "e2e-python-client-token-0123456789";

/// A running `abridge serve`, killed on drop if still running (the serve
/// bench runs several).
pub(crate) struct Serve {
    child: Child,
    pub(crate) base_url: String,
    stderr: std::sync::mpsc::Receiver<String>,
}

/// Writes a tokens file readable by its owner only, as `abridge serve`
/// requires (it refuses one that others can read).
pub(crate) fn write_tokens(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    Ok(())
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    fn start(binary: &Path, work: &Path) -> anyhow::Result<Self> {
        let tokens = work.join("tokens.txt");
        write_tokens(&tokens, &format!("{TOKEN} python\n"))?;
        Self::start_on(binary, work.join("store").as_os_str(), &tokens, &[])
    }

    /// `abridge serve` on a free loopback port over `store` (a directory
    /// or a PostgreSQL URL), with the tokens file and any `extra` flags;
    /// returns once it says where it listens.
    pub(crate) fn start_on(
        binary: &Path,
        store: &std::ffi::OsStr,
        tokens: &Path,
        extra: &[&str],
    ) -> anyhow::Result<Self> {
        let mut child = Command::new(binary)
            .args(["serve", "--listen", "127.0.0.1:0", "--store"])
            .arg(store)
            .arg("--tokens-file")
            .arg(tokens)
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start abridge serve")?;
        let pipe = child.stderr.take().context("no stderr")?;
        let (lines, stderr) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        let mut serve = Serve {
            child,
            base_url: String::new(),
            stderr,
        };
        let line = serve
            .stderr
            .recv_timeout(Duration::from_secs(30))
            .context("abridge serve said nothing in 30 s")?;
        let Some(url) = line.strip_prefix("abridge serve: listening on ") else {
            bail!("abridge serve did not start: {line}");
        };
        serve.base_url = url.to_string();
        Ok(serve)
    }

    /// The process id, to read its memory figures.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then the exit status and what it said on the way out.
    pub(crate) fn terminate(mut self) -> anyhow::Result<String> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()?;
        ensure!(status.success(), "kill -TERM failed");
        let exit = self.child.wait()?;
        // The reader thread ends at the pipe's end, once the process is gone.
        let said: Vec<String> = self.stderr.iter().collect();
        let said = said.join("\n");
        ensure!(
            exit.success(),
            "abridge serve exited with {exit} on SIGTERM:\n{said}"
        );
        Ok(said)
    }
}

/// Runs the check; fails with what went wrong.
pub(crate) fn run(binary: &Path, root: &Path, work: &Path) -> anyhow::Result<()> {
    let work = work.join("serve");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let serve = Serve::start(binary, &work)?;
    let started = Instant::now();
    let output = Command::new("python3")
        .arg(root.join("examples/python/abridge_client.py"))
        .args(["--url", &serve.base_url, "--token", TOKEN])
        .arg("--sample")
        .arg(root.join(SAMPLE))
        .args(["--window", &WINDOW.to_string(), "--session", "pi-mono"])
        .output()
        .context("cannot run python3")?;
    ensure!(
        output.status.success(),
        "the Python client failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let figures: serde_json::Value = serde_json::from_slice(&output.stdout)
        .context("the Python client's output is not one JSON line")?;
    let number = |key: &str| figures[key].as_u64().unwrap_or(0);
    ensure!(
        number("landed") >= 2,
        "Maintenance landed {} times: {figures}",
        number("landed")
    );
    ensure!(
        number("tokens") <= number("threshold"),
        "the session ended above its threshold: {figures}"
    );
    ensure!(
        number("request_messages") > 0 && figures["request_provider"] == "anthropic",
        "no request came back: {figures}"
    );
    ensure!(
        figures["listed"] == true,
        "the session is not listed: {figures}"
    );
    println!(
        "e2e: python client: {} turns in {:.1}s, {} passes landed {} times, {} of {} tokens at the end, request of {} messages",
        number("turns"),
        started.elapsed().as_secs_f64(),
        number("passes"),
        number("landed"),
        number("tokens"),
        number("threshold"),
        number("request_messages")
    );
    let said = serve.terminate()?;
    ensure!(
        said.contains("abridge serve: stopped"),
        "no clean stop on SIGTERM:\n{said}"
    );
    Ok(())
}
