//! `cargo xtask bench serve-reads`: does one tenant's heavy reads slow
//! another tenant down?
//!
//! One `abridge serve` (release build, JSONL store) holds a 100 MB session
//! of tenant `heavy`, written straight into the store beforehand, and a
//! one-turn session of tenant `light`. First `light` calls `/stats` on its
//! session one call after another for a few seconds alone (the baseline);
//! then `heavy` runs four `/report` loops on its big session at once while
//! `light` keeps calling `/stats`. Figures: `light`'s `/stats` p50 / p99 /
//! max alone and under the load, the reports that finished, the server's
//! peak RSS (VmHWM). Issue 28 asks for that p99 under 50 ms.

use std::path::Path;
use std::time::Duration;
use std::time::Instant;

use abridge_session::Draft;
use abridge_session::FsyncPolicy;
use abridge_session::Header;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use anyhow::Context;
use anyhow::ensure;
use serde_json::json;

use super::Section;
use super::fmt_duration;
use super::load::quantile;
use crate::e2e_serve::Serve;

/// The big session's size, roughly (its JSONL file).
const SESSION_BYTES: u64 = 100 * 1024 * 1024;
/// Concurrent report loops of the heavy tenant.
const REPORTS: usize = 4;
/// How long `light` measures alone, then under the load.
const BASELINE: Duration = Duration::from_secs(5);
const LOADED: Duration = Duration::from_secs(30);
const HEAVY_TOKEN: &str = "bench-heavy-token-0123456789abcdef";
const LIGHT_TOKEN: &str = "bench-light-token-0123456789abcdef";

/// What one run measured.
#[derive(Debug, Default)]
struct Figures {
    file_bytes: u64,
    open: Duration,
    alone: Vec<Duration>,
    loaded: Vec<Duration>,
    stats_failed: usize,
    reports: usize,
    report_bytes: u64,
    peak_rss: u64,
}

pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let binary = crate::release_cli::build_cli(&root)?;
    let work = root.join("target").join("bench-serve-reads");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let tokens = work.join("tokens.txt");
    crate::e2e_serve::write_tokens(
        &tokens,
        &format!("{HEAVY_TOKEN} heavy\n{LIGHT_TOKEN} light\n"),
    )?;
    let store = work.join("store");
    let file_bytes = write_big_session(&store.join("heavy").join("big.jsonl"))?;
    let serve = Serve::start_on(&binary, store.as_os_str(), &tokens, &["--model", "gpt-4o"])?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let base = serve.base_url.clone();
    let mut figures = runtime.block_on(measure(&base))?;
    figures.file_bytes = file_bytes;
    figures.peak_rss = vm_hwm(serve.pid()).unwrap_or(0);
    serve.terminate()?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(vec![section(&figures)])
}

/// Writes tenant `heavy`'s session `big`: the record `abridge serve`
/// writes first, then turns of about 4 kB until the file passes
/// [`SESSION_BYTES`]. Returns the file's size.
fn write_big_session(path: &Path) -> anyhow::Result<u64> {
    std::fs::create_dir_all(path.parent().context("a parent")?)?;
    let options = JsonlOptions {
        fsync: FsyncPolicy::Never,
        ..JsonlOptions::default()
    };
    let store = JsonlStore::open(path, options)?;
    let mut session = Session::create(Box::new(store), Header::new("big"))?;
    // The `serve/session` record (abridge-serve's TYPE_SERVE_SESSION).
    let record = json!({
        "tenant": "heavy",
        "model": "gpt-4o",
        "settings": serde_json::to_value(abridge::Settings::default())?,
    });
    session.append(Draft::log("serve/session", record))?;
    let words = [
        "parser",
        "token",
        "window",
        "checkpoint",
        "session",
        "request",
        "stream",
        "offset",
        "buffer",
        "retry",
        "schema",
        "branch",
    ];
    let mut turn = 0usize;
    while std::fs::metadata(path)?.len() < SESSION_BYTES {
        let mut drafts = Vec::with_capacity(1000);
        for _ in 0..500 {
            let text: String = (0..300)
                .map(|i| words[(turn * 7 + i * 13) % words.len()])
                .collect::<Vec<_>>()
                .join(" ");
            drafts.push(Draft::message(abridge_llm::Message::user(format!(
                "step {turn}: {text}"
            ))));
            drafts.push(Draft::message(abridge_llm::Message::assistant(format!(
                "done {turn}: {text}"
            ))));
            turn += 1;
        }
        session.append_batch(drafts)?;
    }
    session.sync()?;
    Ok(std::fs::metadata(path)?.len())
}

async fn measure(base: &str) -> anyhow::Result<Figures> {
    let http = reqwest::Client::new();
    let mut figures = Figures::default();
    // `light`'s session.
    let created = http
        .post(format!("{base}/v1/sessions"))
        .bearer_auth(LIGHT_TOKEN)
        .header("content-type", "application/json")
        .body(json!({"id": "small"}).to_string())
        .send()
        .await?;
    ensure!(
        created.status().as_u16() == 201,
        "create: {}",
        created.status()
    );
    let appended = http
        .post(format!("{base}/v1/sessions/small/messages"))
        .bearer_auth(LIGHT_TOKEN)
        .header("content-type", "application/json")
        .body(
            json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]})
                .to_string(),
        )
        .send()
        .await?;
    ensure!(
        appended.status().is_success(),
        "append: {}",
        appended.status()
    );
    // The big session's first use reads the whole log.
    let started = Instant::now();
    let opened = http
        .get(format!("{base}/v1/sessions/big/stats"))
        .bearer_auth(HEAVY_TOKEN)
        .send()
        .await?;
    ensure!(
        opened.status().is_success(),
        "open the big session: {}",
        opened.status()
    );
    figures.open = started.elapsed();

    let stats_url = format!("{base}/v1/sessions/small/stats");
    let (alone, failed) = stats_loop(&http, &stats_url, Instant::now() + BASELINE).await;
    figures.alone = alone;
    figures.stats_failed += failed;

    let until = Instant::now() + LOADED;
    let reports = (0..REPORTS).map(|_| report_loop(&http, base, until));
    let (loaded, reports) = tokio::join!(
        stats_loop(&http, &stats_url, until),
        futures::future::join_all(reports)
    );
    figures.loaded = loaded.0;
    figures.stats_failed += loaded.1;
    for (count, bytes) in reports {
        figures.reports += count;
        figures.report_bytes += bytes;
    }
    figures.alone.sort();
    figures.loaded.sort();
    Ok(figures)
}

/// `light`'s `/stats`, one call after another until `until`: the time of
/// each good call, and how many failed.
async fn stats_loop(http: &reqwest::Client, url: &str, until: Instant) -> (Vec<Duration>, usize) {
    let mut times = Vec::new();
    let mut failed = 0;
    while Instant::now() < until {
        let started = Instant::now();
        let ok = match http.get(url).bearer_auth(LIGHT_TOKEN).send().await {
            Ok(response) => response.status().is_success() && response.bytes().await.is_ok(),
            Err(_) => false,
        };
        if ok {
            times.push(started.elapsed());
        } else {
            failed += 1;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (times, failed)
}

/// `heavy`'s `/report` of its big session, again and again until `until`
/// (a report under way then is finished): reports read, and their bytes.
async fn report_loop(http: &reqwest::Client, base: &str, until: Instant) -> (usize, u64) {
    let mut count = 0;
    let mut bytes = 0;
    while Instant::now() < until {
        let response = http
            .get(format!("{base}/v1/sessions/big/report"))
            .bearer_auth(HEAVY_TOKEN)
            .send()
            .await;
        let Ok(response) = response else { break };
        if !response.status().is_success() {
            break;
        }
        match response.bytes().await {
            Ok(body) => {
                count += 1;
                bytes += body.len() as u64;
            }
            Err(_) => break,
        }
    }
    (count, bytes)
}

/// Peak resident memory of process `pid` (Linux `VmHWM`), in bytes.
fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn section(f: &Figures) -> Section {
    let mib = |bytes: u64| format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0));
    let spread = |samples: &[Duration]| {
        format!(
            "{} / {} / {}",
            fmt_duration(quantile(samples, 0.5)),
            fmt_duration(quantile(samples, 0.99)),
            fmt_duration(samples.last().copied().unwrap_or_default())
        )
    };
    let mut section = Section::new(
        "abridge serve: heavy reads beside a light tenant",
        &format!(
            "One release `abridge serve` on JSONL. Tenant `heavy` holds a {} session; tenant \
             `light` calls `/stats` on a one-turn session, one call after another with 10 ms \
             between, first alone for {} s, then for {} s while `heavy` runs {REPORTS} `/report` \
             loops on its big session at once. The client is one tokio thread on the same \
             machine.",
            mib(f.file_bytes),
            BASELINE.as_secs(),
            LOADED.as_secs()
        ),
        &[
            "first open of the big session",
            "light /stats alone p50 / p99 / max",
            "light /stats under load p50 / p99 / max",
            "stats calls (alone, loaded, failed)",
            "reports read",
            "server peak RSS",
        ],
    );
    section.row(vec![
        fmt_duration(f.open),
        spread(&f.alone),
        spread(&f.loaded),
        format!("{}, {}, {}", f.alone.len(), f.loaded.len(), f.stats_failed),
        format!("{} ({})", f.reports, mib(f.report_bytes)),
        mib(f.peak_rss),
    ]);
    let p99 = quantile(&f.loaded, 0.99);
    section.note(format!(
        "Target (issue 28): `light`'s `/stats` p99 under 50 ms while the reports run: {}.",
        if p99 < Duration::from_millis(50) && f.stats_failed == 0 {
            "met"
        } else {
            "not met"
        }
    ));
    section
}
