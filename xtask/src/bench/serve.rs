//! `cargo xtask bench serve`: `abridge serve` under load, four worker
//! processes sharing one PostgreSQL against one worker on JSONL files.
//!
//! 200 sessions run at once from one tokio client. Each is created, then
//! gets 40 turns (a user message and a reply per append), each followed by
//! `after-turn`; every fourth turn the client also reads `request`. The
//! calls of a session go round-robin across the workers (append `j` of
//! session `i` to worker `(i + j) % 4`), so every worker keeps serving
//! sessions another has just written and must catch up first. A small
//! window with the model-free `digest` method forces compactions, with no
//! model anywhere. A `409 stale_write` is counted and the append resent
//! once (the client knows it still wants it).
//!
//! Afterwards every session is read back from its store and checked with
//! the invariants `abridge check` runs. Figures: calls per second, p50/p99
//! of append and of request, compactions, conflicts, sessions valid, peak
//! RSS (VmHWM) of the busiest worker; the same load on JSONL with one
//! worker gives the ratio. Bounded: 200 x 40 turns, and the run fails
//! past two minutes. Needs `ABRIDGE_TEST_POSTGRES` (`eval "$(.ci/postgres.sh)"`).

use std::path::Path;
use std::time::Duration;
use std::time::Instant;

use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use abridge_session::SessionStore;
use anyhow::Context;
use anyhow::ensure;
use serde_json::Value;
use serde_json::json;

use super::Section;
use super::fmt_duration;
use super::load::quantile;
use crate::e2e_serve::Serve;

/// Sessions driven at once.
const SESSIONS: usize = 200;
/// Turns (appends) per session.
const TURNS: usize = 40;
/// Workers sharing PostgreSQL.
const PG_WORKERS: usize = 4;
/// Every this many turns the client also reads `request`.
const REQUEST_EVERY: usize = 4;
/// A window a dozen turns fill, so `digest` compacts each session.
const WINDOW: u64 = 6_000;
/// The whole load must finish within this.
const LIMIT: Duration = Duration::from_secs(120);
/// The client's token and tenant.
const TOKEN: &str = "bench-serve-token-0123456789abcdef";
const TENANT: &str = "bench";

/// What one load run measured.
#[derive(Debug, Default)]
struct Figures {
    workers: usize,
    wall: Duration,
    calls: usize,
    appends: Vec<Duration>,
    requests: Vec<Duration>,
    compactions: usize,
    conflicts: usize,
    valid: usize,
    peak_rss: u64,
}

impl Figures {
    fn calls_per_s(&self) -> f64 {
        self.calls as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// What one session's task saw.
#[derive(Debug, Default)]
struct SessionRun {
    calls: usize,
    appends: Vec<Duration>,
    requests: Vec<Duration>,
    compactions: usize,
    conflicts: usize,
}

/// Runs both loads and returns the section.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let url = std::env::var("ABRIDGE_TEST_POSTGRES").context(
        "bench serve needs PostgreSQL: run `eval \"$(.ci/postgres.sh)\"` first (sets ABRIDGE_TEST_POSTGRES)",
    )?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let binary = crate::release_cli::build_cli(&root)?;
    let work = root.join("target").join("bench-serve");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let tokens = work.join("tokens.txt");
    crate::e2e_serve::write_tokens(&tokens, &format!("{TOKEN} {TENANT}\n"))?;

    let schema = format!("bench_serve_{}", std::process::id());
    drop_schema(&url, &schema)?;
    let target = format!("{url}#{schema}");
    let pg = measure(&binary, &tokens, target.as_ref(), PG_WORKERS, &|id| {
        let sessions = abridge_store_postgres::PgSessions::connect(
            &url,
            &abridge_store_postgres::PgOptions {
                schema: schema.clone(),
                ..abridge_store_postgres::PgOptions::default()
            },
        )?;
        Ok(Box::new(sessions.store(&format!("{TENANT}/{id}"))))
    });
    let _ = drop_schema(&url, &schema);
    let pg = pg?;

    let dir = work.join("jsonl");
    let jsonl = measure(&binary, &tokens, dir.as_os_str(), 1, &|id| {
        let path = dir.join(TENANT).join(format!("{id}.jsonl"));
        let options = JsonlOptions {
            read_only: true,
            ..JsonlOptions::default()
        };
        Ok(Box::new(JsonlStore::open(path, options)?))
    })?;
    Ok(vec![section(&pg, &jsonl)])
}

/// Opens one session's store for the final check.
type Reader<'a> = &'a dyn Fn(&str) -> anyhow::Result<Box<dyn SessionStore>>;

/// Starts `workers` workers on `store`, drives the load, checks every
/// session, stops the workers.
fn measure(
    binary: &Path,
    tokens: &Path,
    store: &std::ffi::OsStr,
    workers: usize,
    reader: Reader<'_>,
) -> anyhow::Result<Figures> {
    let model = ["--model", "gpt-4o"];
    let serves = (0..workers)
        .map(|_| Serve::start_on(binary, store, tokens, &model))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bases: Vec<String> = serves.iter().map(|s| s.base_url.clone()).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let runs = runtime.block_on(async {
        tokio::time::timeout(LIMIT, drive_all(&bases))
            .await
            .map_err(|_| anyhow::anyhow!("the load did not finish within {LIMIT:?}"))?
    })?;
    let wall = started.elapsed();
    let peak_rss = serves
        .iter()
        .filter_map(|s| vm_hwm(s.pid()))
        .max()
        .unwrap_or(0);
    for serve in serves {
        serve.terminate()?;
    }
    let mut figures = Figures {
        workers,
        wall,
        peak_rss,
        ..Figures::default()
    };
    for run in runs {
        figures.calls += run.calls;
        figures.appends.extend(run.appends);
        figures.requests.extend(run.requests);
        figures.compactions += run.compactions;
        figures.conflicts += run.conflicts;
    }
    figures.appends.sort();
    figures.requests.sort();
    for i in 0..SESSIONS {
        let (session, _) = Session::open(reader(&id(i))?)?;
        let report = abridge_compact::check::check_invariants(&session);
        if report.is_ok() && report.stale_starts.is_empty() {
            figures.valid += 1;
        }
    }
    Ok(figures)
}

fn id(i: usize) -> String {
    format!("s-{i}")
}

/// Every session's task at once, on the client's one thread.
async fn drive_all(bases: &[String]) -> anyhow::Result<Vec<SessionRun>> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(SESSIONS)
        .build()?;
    let tasks = (0..SESSIONS).map(|i| drive(&http, bases, i));
    futures::future::join_all(tasks).await.into_iter().collect()
}

/// One session: create, then `TURNS` appends each with its `after-turn`,
/// and a `request` every `REQUEST_EVERY` turns, round-robin over workers.
async fn drive(http: &reqwest::Client, bases: &[String], i: usize) -> anyhow::Result<SessionRun> {
    let mut run = SessionRun::default();
    let base = |n: usize| &bases[n % bases.len()];
    let spec = json!({"id": id(i), "window": WINDOW, "settings": {"method_order": ["digest"]}});
    let (status, body) = call(
        http,
        "POST",
        &format!("{}/v1/sessions", base(i)),
        Some(&spec),
    )
    .await?;
    ensure!(status == 201, "create {}: {status} {body}", id(i));
    run.calls += 1;
    for j in 0..TURNS {
        let at = base(i + j);
        let path = format!("{at}/v1/sessions/{}", id(i));
        let turn = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": format!("step {j}: {}", "the parser reads each module and reports its errors ".repeat(20))}]},
            {"role": "assistant", "content": [{"type": "text", "text": format!("done with step {j}")}]},
        ]});
        let mut sent = false;
        for _ in 0..2 {
            let t = Instant::now();
            let (status, body) =
                call(http, "POST", &format!("{path}/messages"), Some(&turn)).await?;
            run.calls += 1;
            if status == 409 {
                run.conflicts += 1;
                continue;
            }
            ensure!(status == 200, "append {} turn {j}: {status} {body}", id(i));
            run.appends.push(t.elapsed());
            sent = true;
            break;
        }
        ensure!(sent, "append {} turn {j}: refused twice as stale", id(i));
        let (status, pass) = call(
            http,
            "POST",
            &format!("{path}/after-turn"),
            Some(&json!({})),
        )
        .await?;
        run.calls += 1;
        ensure!(
            status == 200,
            "after-turn {} turn {j}: {status} {pass}",
            id(i)
        );
        run.compactions += pass["outcomes"].as_array().map_or(0, Vec::len);
        if j % REQUEST_EVERY == REQUEST_EVERY - 1 {
            let other = format!("{}/v1/sessions/{}/request", base(i + j + 1), id(i));
            let t = Instant::now();
            let (status, body) = call(http, "GET", &other, None).await?;
            run.calls += 1;
            ensure!(status == 200, "request {} turn {j}: {status} {body}", id(i));
            run.requests.push(t.elapsed());
        }
    }
    Ok(run)
}

/// One call: status and JSON body.
async fn call(
    http: &reqwest::Client,
    method: &str,
    url: &str,
    body: Option<&Value>,
) -> anyhow::Result<(u16, Value)> {
    let request = match method {
        "GET" => http.get(url),
        _ => http.post(url),
    };
    let request = request.bearer_auth(TOKEN);
    let request = match body {
        Some(body) => request
            .header("content-type", "application/json")
            .body(body.to_string()),
        None => request,
    };
    let response = request
        .send()
        .await
        .with_context(|| format!("{method} {url}"))?;
    let status = response.status().as_u16();
    let text = response.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// Peak resident memory of process `pid` (Linux `VmHWM`), in bytes.
fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Drops the bench's schema (before, in case a run died, and after).
fn drop_schema(url: &str, schema: &str) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .context("connect to PostgreSQL")?;
        let driver = tokio::spawn(connection);
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .await
            .context("drop the bench schema")?;
        drop(client);
        let _ = driver.await;
        Ok(())
    })
}

fn section(pg: &Figures, jsonl: &Figures) -> Section {
    let mut section = Section::new(
        "abridge serve under load",
        &format!(
            "{SESSIONS} sessions at once from one tokio client, {TURNS} turns each (append, then \
             after-turn; `request` every {REQUEST_EVERY}th turn), calls round-robin across the \
             workers, window {WINDOW} with `digest` (no model). Release build on loopback; \
             PostgreSQL is the `.ci/postgres.sh` cluster on the same machine. Every session is \
             read back and checked at the end."
        ),
        &[
            "store",
            "workers",
            "calls/s",
            "append p50 / p99",
            "request p50 / p99",
            "compactions",
            "409 conflicts",
            "sessions valid",
            "peak RSS (largest worker)",
            "wall",
        ],
    );
    for (name, f) in [("PostgreSQL", pg), ("JSONL", jsonl)] {
        section.row(vec![
            name.to_string(),
            f.workers.to_string(),
            format!("{:.0}", f.calls_per_s()),
            format!(
                "{} / {}",
                fmt_duration(quantile(&f.appends, 0.5)),
                fmt_duration(quantile(&f.appends, 0.99))
            ),
            format!(
                "{} / {}",
                fmt_duration(quantile(&f.requests, 0.5)),
                fmt_duration(quantile(&f.requests, 0.99))
            ),
            f.compactions.to_string(),
            f.conflicts.to_string(),
            format!("{} / {SESSIONS}", f.valid),
            format!("{:.1} MiB", f.peak_rss as f64 / (1024.0 * 1024.0)),
            format!("{:.1} s", f.wall.as_secs_f64()),
        ]);
    }
    section.note(format!(
        "Throughput ratio, {PG_WORKERS} workers on PostgreSQL to one worker on JSONL: {:.2}x. \
         Each session's calls come one after another, so a conflict needs two workers writing \
         one session at once (none is expected here): what the figures show is the catch-up \
         every call pays, since each call lands on a worker other than the last one. The \
         machine's cores are shared by the workers, PostgreSQL and the client.",
        pg.calls_per_s() / jsonl.calls_per_s().max(1e-9)
    ));
    section
}
