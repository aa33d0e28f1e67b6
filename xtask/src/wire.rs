//! `cargo xtask wire`: every request body our encoders write, checked
//! against the providers' own request types.
//!
//! The corpus (`wire_corpus`) is written as JSON files under
//! `target/wire`; `xtask/wire/check.py` walks each body against the
//! TypedDicts of the `openai` and `anthropic` Python packages pinned in
//! `xtask/wire/requirements.txt`, installed once into a venv in the e2e
//! cache (`$ABRIDGE_E2E_CACHE`, default `~/.cache/abridge-e2e`), and checks
//! the beta header each body needs. A field we send that the definition
//! does not allow fails the run; the check's own file lists each place
//! where a definition and the server disagree, with its source.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use anyhow::bail;

/// Writes the corpus and checks it.
pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    let out = root.join("target").join("wire");
    let count = crate::wire_corpus::write(root, &out)?;
    println!("wire: {count} bodies written to {}", out.display());
    let python = ensure_venv(root)?;
    let status = Command::new(&python)
        .arg(root.join("xtask").join("wire").join("check.py"))
        .arg(&out)
        .status()
        .context("cannot run the wire check")?;
    if !status.success() {
        bail!("request bodies the providers' definitions do not allow (see above)");
    }
    // The official SDKs through `abridge proxy`: the test is ignored in a
    // plain `cargo test` (it needs these packages), so it runs here, with
    // the venv just checked.
    println!("$ cargo test -p abridge-proxy --test proxy sdk -- --ignored");
    let status = Command::new("cargo")
        .args([
            "test",
            "-p",
            "abridge-proxy",
            "--test",
            "proxy",
            "sdk",
            "--",
            "--ignored",
        ])
        .env("ABRIDGE_SDK_PYTHON", &python)
        .current_dir(root)
        .status()
        .context("cannot run the proxy's SDK test")?;
    if !status.success() {
        bail!("the official openai or anthropic SDK failed through abridge proxy (see above)");
    }
    Ok(())
}

/// The venv's python with the pinned packages, installed when the pins
/// changed (the requirements file is copied beside the venv once it is
/// installed, and compared on the next run).
fn ensure_venv(root: &Path) -> anyhow::Result<PathBuf> {
    let cache = crate::e2e_cache::cache_dir();
    let venv = cache.join("wire-venv");
    let python = venv.join("bin").join("python");
    let wanted = std::fs::read_to_string(root.join("xtask").join("wire").join("requirements.txt"))
        .context("cannot read xtask/wire/requirements.txt")?;
    let installed = venv.join("requirements.txt");
    if python.exists() && std::fs::read_to_string(&installed).ok().as_deref() == Some(&wanted) {
        return Ok(python);
    }
    println!(
        "wire: installing the providers' packages into {}",
        venv.display()
    );
    std::fs::create_dir_all(&cache)?;
    let created = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .context("cannot run python3 -m venv")?;
    if !created.success() {
        bail!("python3 -m venv {} failed", venv.display());
    }
    let pip = Command::new(venv.join("bin").join("pip"))
        .args(["install", "--quiet", "-r"])
        .arg(root.join("xtask").join("wire").join("requirements.txt"))
        .status()
        .context("cannot run pip")?;
    if !pip.success() {
        bail!("pip could not install xtask/wire/requirements.txt");
    }
    std::fs::write(&installed, wanted)?;
    Ok(python)
}
