//! The e2e check of `abridge proxy` with an agent nobody here wrote:
//! aider, installed from PyPI at a pinned version, pointed at the proxy
//! (its only change is the base URL), with the llama.cpp server as the
//! proxy's OpenAI upstream. One aider process takes several requests on
//! its standard input, so its history grows in one conversation until the
//! proxy compacts it; the proxy's log is then checked as any abridge log.
//!
//! SmolLM2-135M writes poor edits; the check proves the wire and the
//! proxy's bookkeeping (every turn answered, a compaction landed, the log
//! valid), never the quality of aider's work.

use std::fs::File;
use std::net::TcpListener;
use std::net::TcpStream;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use anyhow::Context;
use anyhow::bail;
use anyhow::ensure;

/// The aider release installed: pinned, so a new release cannot change
/// what the check sends.
const AIDER: &str = "aider-chat==0.86.2";

/// The proxy's window. At abridge's smallest (2,048) the kept tail of
/// these long requests alone leaves digest over the window; at 4,096 the
/// history crosses the threshold after about eight requests.
const WINDOW: u64 = 4_096;

/// What the user asks, one request a line: each appends a paragraph of
/// about 250 tokens, so the history grows past the threshold.
const TOPICS: [&str; 12] = [
    "the build",
    "the tests",
    "the proxy",
    "the log",
    "the window",
    "the checkpoint",
    "the recall tool",
    "the settings",
    "the importer",
    "the report",
    "the meter",
    "the branch",
];

fn requests() -> Vec<String> {
    TOPICS
        .iter()
        .map(|topic| {
            let sentence = format!(
                "Note about {topic}: it matters for a long session, it is measured in tokens, \
                 it is kept in an append-only log, and nothing written is ever lost."
            );
            format!(
                "Append this paragraph to notes.md: {}",
                [sentence.as_str(); 6].join(" ")
            )
        })
        .collect()
}

/// The checks of this module.
pub(crate) const CHECKS: [(&str, crate::e2e_checks::Check); 1] = [(
    "aider from PyPI, through abridge proxy, compacted in flight",
    aider_through_proxy,
)];

fn aider_through_proxy(
    binary: &Path,
    base_url: &str,
    _root: &Path,
    work: &Path,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let aider = ensure_aider(&crate::e2e_cache::cache_dir())?;
    let dir = work.join("aider");
    let _ = std::fs::remove_dir_all(&dir);
    let (repo, home, store) = (dir.join("repo"), dir.join("home"), dir.join("store"));
    for path in [&repo, &home, &store] {
        std::fs::create_dir_all(path)?;
    }
    std::fs::write(repo.join("notes.md"), "")?;
    // Short answers: a 135M model otherwise writes until the context ends.
    let settings = dir.join("model-settings.yml");
    std::fs::write(
        &settings,
        "- name: openai/smollm2\n  edit_format: whole\n  extra_params:\n    max_tokens: 200\n",
    )?;
    let proxy = ProxyProcess::start(binary, base_url, &store, &dir.join("proxy.log"))?;
    let output = Command::new(&aider)
        .current_dir(&repo)
        .args(["--model", "openai/smollm2", "--model-settings-file"])
        .arg(&settings)
        .args([
            "--no-git",
            "--yes-always",
            "--no-show-model-warnings",
            "--no-check-update",
            "--analytics-disable",
            "--no-stream",
            "--no-pretty",
            "--no-fancy-input",
            "--map-tokens",
            "0",
            "notes.md",
        ])
        .env("OPENAI_API_BASE", format!("http://{}/v1", proxy.address))
        .env("OPENAI_API_KEY", "sk-e2e-not-a-key")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("HOME", &home)
        .stdin(File::open(write_requests(&dir)?)?)
        .output()
        .context("cannot run aider")?;
    let proxy_log = proxy.stop()?;
    ensure!(
        output.status.success(),
        "aider exited with {}:\n{}\n{}\nproxy:\n{proxy_log}",
        output.status,
        tail(&String::from_utf8_lossy(&output.stdout)),
        tail(&String::from_utf8_lossy(&output.stderr)),
    );
    let sessions = jsonl_files(&store)?;
    ensure!(
        !sessions.is_empty(),
        "the proxy logged no session\nproxy:\n{proxy_log}"
    );
    // Aider moves the reminder it appends to the newest request out of
    // that request on the next turn, so each request rewrites the last
    // item the proxy saw: the proxy starts a session linked to the last
    // one every turn (docs/proxy.md), each holding the whole history.
    let (mut replies, mut compactions) = (0, 0);
    for path in &sessions {
        crate::e2e_checks::invariants(binary, path)?;
        let (session, _) = Session::open(Box::new(JsonlStore::open(
            path,
            JsonlOptions {
                read_only: true,
                ..JsonlOptions::default()
            },
        )?))?;
        let mut these = 0;
        for event in session.events() {
            if event
                .message()
                .is_some_and(|m| m.role == abridge_llm::Role::Assistant)
            {
                these += 1;
            }
            if event
                .log()
                .is_some_and(|log| log.kind == abridge_compact::host::TYPE_COMPACTION_SUMMARY)
            {
                compactions += 1;
            }
        }
        replies = replies.max(these);
    }
    let asked = requests().len();
    ensure!(
        replies >= asked,
        "the longest session logs {replies} replies for {asked} requests\nproxy:\n{proxy_log}"
    );
    ensure!(
        compactions >= 1,
        "no compaction landed in {} session(s) at window {WINDOW}\nproxy:\n{proxy_log}",
        sessions.len()
    );
    println!(
        "e2e: aider: {asked} requests, {replies} replies in the longest session, {compactions} compaction(s) in {} session(s), {:.0} s",
        sessions.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The requests, one a line, then end of input (aider exits on it).
fn write_requests(dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join("requests.txt");
    let mut text = requests().join("\n");
    text.push('\n');
    std::fs::write(&path, text)?;
    Ok(path)
}

/// Installs the pinned aider into its own venv in the e2e cache, once.
fn ensure_aider(cache: &Path) -> anyhow::Result<PathBuf> {
    let venv = cache.join("aider-venv");
    let aider = venv.join("bin").join("aider");
    let version = AIDER.rsplit("==").next().unwrap_or(AIDER);
    let installed = Command::new(&aider)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(version));
    if installed {
        return Ok(aider);
    }
    println!(
        "e2e: installing {AIDER} into {} (about 6 minutes, once)",
        venv.display()
    );
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()?;
    ensure!(status.success(), "python3 -m venv failed with {status}");
    let status = Command::new(venv.join("bin").join("pip"))
        .args(["install", "--quiet", AIDER])
        .status()?;
    ensure!(status.success(), "pip install {AIDER} failed with {status}");
    Ok(aider)
}

/// Every `.jsonl` file under `dir`.
fn jsonl_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The last lines of a long output.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// `abridge proxy` on a free loopback port, stopped with SIGTERM.
struct ProxyProcess {
    child: Child,
    address: String,
    log: PathBuf,
}

impl ProxyProcess {
    fn start(binary: &Path, base_url: &str, store: &Path, log: &Path) -> anyhow::Result<Self> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let address = format!("127.0.0.1:{port}");
        // The proxy appends the request's path (`/v1/chat/completions`)
        // to the upstream.
        let upstream = base_url.trim_end_matches('/').trim_end_matches("/v1");
        let file = File::create(log)?;
        let child = Command::new(binary)
            .args(["proxy", "--listen", &address, "--store"])
            .arg(store)
            .args(["--upstream", &format!("openai={upstream}")])
            .args(["--window", &WINDOW.to_string()])
            .stdout(Stdio::from(file.try_clone()?))
            .stderr(Stdio::from(file))
            .spawn()
            .context("cannot start abridge proxy")?;
        let mut proxy = ProxyProcess {
            child,
            address,
            log: log.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(proxy.address.as_str()).is_err() {
            if let Some(status) = proxy.child.try_wait()? {
                bail!(
                    "abridge proxy exited early with {status}: {}",
                    proxy.read_log()
                );
            }
            ensure!(
                Instant::now() < deadline,
                "abridge proxy did not listen within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(proxy)
    }

    fn read_log(&self) -> String {
        tail(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }

    /// Stops the proxy (SIGTERM: it drains and exits) and returns its log.
    fn stop(mut self) -> anyhow::Result<String> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.wait();
        Ok(self.read_log())
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
