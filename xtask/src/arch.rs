//! `cargo xtask lint-arch`: the architecture of docs/architecture.md, checked.
//!
//! Three rules, each a module:
//! - [`layers`]: every dependency edge between workspace crates follows
//!   the layer order of docs/architecture.md;
//! - [`modgraph`]: no import circle between the modules of one crate
//!   (paths read by the scanner in [`items`] over the tokens of [`lexer`]);
//! - [`size`]: no non-test source file under `crates/*/src` over 600
//!   lines;
//! - [`packaged`]: a publishable crate includes no file outside its own
//!   directory and its manifest names what crates.io shows.
//!
//! One line per finding, `path:line: [rule] what`, and a failure exit when
//! there is any. It reads source as text and runs nothing but
//! `cargo metadata`.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use anyhow::bail;

mod items;
mod layers;
mod lexer;
mod modgraph;
mod packaged;
mod size;

/// One broken rule at one place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Finding {
    /// `path:line`, relative to the workspace root.
    pub(crate) location: String,
    /// `layers`, `circle` or `size`.
    pub(crate) rule: &'static str,
    /// What is wrong, in a sentence.
    pub(crate) message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: [{}] {}", self.location, self.rule, self.message)
    }
}

/// Runs every rule over the workspace at `root`; fails when anything is
/// found.
pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    let mut findings = dependency_findings(root)?;
    let crates_dir = root.join("crates");
    let mut crate_dirs: Vec<PathBuf> = std::fs::read_dir(&crates_dir)
        .with_context(|| format!("cannot list {}", crates_dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    crate_dirs.sort();
    for dir in &crate_dirs {
        findings.extend(crate_findings(root, dir)?);
    }
    findings.sort();
    for finding in &findings {
        println!("{finding}");
    }
    if !findings.is_empty() {
        bail!("lint-arch: {} finding(s)", findings.len());
    }
    println!("lint-arch: layers, import circles, file sizes and packaging are clean");
    Ok(())
}

fn dependency_findings(root: &Path) -> anyhow::Result<Vec<Finding>> {
    let output = Command::new("cargo")
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(root)
        .output()
        .context("cannot run cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("cargo metadata printed no JSON")?;
    let root_text = root.to_string_lossy();
    let edges = layers::edges_from_metadata(&metadata, &root_text, &|path| {
        std::fs::read_to_string(path).ok()
    });
    Ok(layers::check(&edges))
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// The crate's targets: `src/lib.rs`, `src/main.rs` and `src/bin/*`.
fn target_roots(src: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|name| src.join(name))
        .filter(|path| path.is_file())
        .collect();
    if let Ok(entries) = std::fs::read_dir(src.join("bin")) {
        let mut bins: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .map(|path| {
                if path.is_dir() {
                    path.join("main.rs")
                } else {
                    path
                }
            })
            .filter(|path| path.extension().is_some_and(|e| e == "rs") && path.is_file())
            .collect();
        bins.sort();
        roots.extend(bins);
    }
    roots
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    Ok(())
}

/// Circles and sizes for one crate directory.
fn crate_findings(root: &Path, dir: &Path) -> anyhow::Result<Vec<Finding>> {
    let src = dir.join("src");
    if !src.is_dir() {
        return Ok(Vec::new());
    }
    let crate_name = relative(root, dir);
    let read = |path: &Path| std::fs::read_to_string(path).ok();
    let mut findings = Vec::new();
    let mut test_files = BTreeSet::new();
    let mut code_files = BTreeSet::new();
    for target in target_roots(&src) {
        let tree = modgraph::load(&target, &read);
        for module in &tree.modules {
            if module.test {
                test_files.insert(module.file.clone());
            } else {
                code_files.insert(module.file.clone());
            }
        }
        for circle in tree.circles() {
            findings.push(circle_finding(root, &crate_name, &tree, &circle));
        }
    }
    let mut files = Vec::new();
    rust_files(&src, &mut files)?;
    files.sort();
    findings.extend(packaging_findings(root, dir, &files)?);
    for file in files {
        if test_files.contains(&file) && !code_files.contains(&file) {
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let scan = items::scan(&text);
        if scan.test_only {
            continue;
        }
        let (lines, first_over) = size::non_test_lines(text.lines().count(), &scan);
        if let Some(line) = first_over {
            findings.push(Finding {
                location: format!("{}:{line}", relative(root, &file)),
                rule: "size",
                message: format!(
                    "{lines} non-test lines, over the limit of {}: split it by concern",
                    size::LIMIT
                ),
            });
        }
    }
    Ok(findings)
}

/// What would break or be missing when the crate at `dir` is packaged.
fn packaging_findings(root: &Path, dir: &Path, files: &[PathBuf]) -> anyhow::Result<Vec<Finding>> {
    let manifest_path = dir.join("Cargo.toml");
    let manifest = std::fs::read_to_string(&manifest_path)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    if packaged::unpublished(&manifest) {
        return Ok(Vec::new());
    }
    let mut findings = Vec::new();
    let missing = packaged::missing_keys(&manifest);
    if !missing.is_empty() {
        findings.push(Finding {
            location: format!("{}:1", relative(root, &manifest_path)),
            rule: "packaged",
            message: format!(
                "a publishable crate's [package] lacks {}",
                missing.join(", ")
            ),
        });
    }
    if !dir.join("README.md").is_file() {
        findings.push(Finding {
            location: format!("{}:1", relative(root, &manifest_path)),
            rule: "packaged",
            message: "a publishable crate has no README.md".to_string(),
        });
    }
    for file in files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let here = file.parent().unwrap_or(dir);
        for (line, path) in packaged::includes(&text) {
            if !packaged::resolve(here, &path).starts_with(dir) {
                findings.push(Finding {
                    location: format!("{}:{line}", relative(root, file)),
                    rule: "packaged",
                    message: format!(
                        "includes {path}, outside the crate: a package would not hold it (move it into the crate)"
                    ),
                });
            }
        }
    }
    Ok(findings)
}

fn circle_finding(
    root: &Path,
    crate_name: &str,
    tree: &modgraph::Tree,
    circle: &[modgraph::Edge],
) -> Finding {
    let place = |edge: &modgraph::Edge| {
        format!(
            "{}:{}",
            relative(root, &tree.modules[edge.from].file),
            edge.line
        )
    };
    let mut names: Vec<String> = circle.iter().map(|e| tree.modules[e.from].name()).collect();
    names.sort();
    names.dedup();
    let edges: Vec<String> = circle
        .iter()
        .map(|e| {
            format!(
                "{} -> {} at {}",
                tree.modules[e.from].name(),
                tree.modules[e.to].name(),
                place(e)
            )
        })
        .collect();
    Finding {
        location: circle.first().map(place).unwrap_or_default(),
        rule: "circle",
        message: format!(
            "import circle in {crate_name} between {}: {}",
            names.join(", "),
            edges.join("; ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::crate_findings;

    /// The circles issue 14 named in these crates (session's blob/jsonl,
    /// snapcompact's inline/instructions) and the one the lint found
    /// beside them (import's aider/format) stay broken, and their files
    /// stay under the limit.
    #[test]
    fn broken_circles_stay_broken() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap_or(Path::new(".."));
        for name in ["session", "snapcompact", "import"] {
            let findings = crate_findings(root, &root.join("crates").join(name)).unwrap();
            let shown: Vec<String> = findings.iter().map(ToString::to_string).collect();
            assert!(shown.is_empty(), "{name}: {shown:#?}");
        }
    }
}
