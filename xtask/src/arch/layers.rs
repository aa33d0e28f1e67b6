//! The dependency rule: every edge between workspace crates against the
//! layer order of docs/architecture.md, "The layers". This table is the one place
//! that order is written down in code; when the map changes, change both.
//!
//! - A normal or build dependency points to a lower layer.
//! - A dev-dependency may also point to a sibling on the same layer
//!   (meter's tests read a Codex rollout through the importer), as long as
//!   the sibling does not depend back, and never between the three
//!   backends: they meet only in `abridge`. See docs/design-changes.md.
//! - `abridge-store-postgres` implements session's store and is chosen by
//!   URL in `abridge` and `abridge-serve`: nobody else depends on it.
//! - `abridge-test-support` is a dev-dependency only; it may use any layer.
//! - The tools (`xtask`, the cross-crate `abridge-tests`) may use anything,
//!   and nothing depends on them.

use serde_json::Value;

use super::Finding;

/// docs/architecture.md "The layers", lowest first: `llm <- {session,
/// providers, redact} <- {import, meter} <- compact <- {compact-basic,
/// prune, snapcompact} <- abridge <- serve <- proxy <- cli` (the CLI runs
/// both faces), with `store-postgres` beside the session's consumers.
const LAYERS: &[&[&str]] = &[
    &["abridge-llm"],
    // The provider clients speak only the vocabulary: beside the log, so a
    // decoder change rebuilds only what sends requests. Redaction, too,
    // needs only the vocabulary; the seam applies it.
    &["abridge-session", "abridge-providers", "abridge-redact"],
    &["abridge-import", "abridge-meter", "abridge-store-postgres"],
    &["abridge-compact"],
    &[
        "abridge-compact-basic",
        "abridge-prune",
        "abridge-snapcompact",
    ],
    &["abridge"],
    // The views read a session for people (with the room's settings and
    // frame expansion); both faces print them.
    &["abridge-views"],
    // The CLI's `serve` subcommand calls the service, so serve sits below it.
    &["abridge-serve"],
    // The proxy is a face like serve, one step above it: it reuses serve's
    // accept loop, body limits, error bodies and stores instead of a copy.
    &["abridge-proxy"],
    &["abridge-cli"],
];

/// The layer whose crates never depend on each other, not even in tests.
const BACKENDS: usize = 4;

/// Crates only some crates may depend on, and which.
const ONLY_FOR: &[(&str, &[&str])] = &[("abridge-store-postgres", &["abridge", "abridge-serve"])];

/// Shared test builders: a dev-dependency only.
const TEST_SUPPORT: &str = "abridge-test-support";

/// Workspace members outside the layers that may use every crate.
const TOOLS: &[&str] = &["xtask", "abridge-tests"];

/// One internal dependency edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DepEdge {
    /// The crate that depends.
    pub(crate) from: String,
    /// The crate depended on.
    pub(crate) to: String,
    /// `normal`, `dev` or `build`.
    pub(crate) kind: String,
    /// Where the edge is written: `Cargo.toml:line`, relative to the root.
    pub(crate) location: String,
}

/// The internal edges of the workspace, from `cargo metadata --no-deps
/// --format-version 1` and the manifests' text (`manifest` reads one).
pub(crate) fn edges_from_metadata(
    metadata: &Value,
    root: &str,
    manifest: &dyn Fn(&str) -> Option<String>,
) -> Vec<DepEdge> {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let mut edges = Vec::new();
    for package in &packages {
        let from = package["name"].as_str().unwrap_or_default();
        let manifest_path = package["manifest_path"].as_str().unwrap_or_default();
        let shown = manifest_path
            .strip_prefix(root)
            .map_or(manifest_path, |p| p.trim_start_matches('/'));
        let text = manifest(manifest_path).unwrap_or_default();
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            if dep.get("path").and_then(Value::as_str).is_none() {
                continue;
            }
            let to = dep["name"].as_str().unwrap_or_default();
            let kind = dep["kind"].as_str().unwrap_or("normal");
            let key = dep["rename"].as_str().unwrap_or(to);
            let line = manifest_line(&text, kind, key).unwrap_or(1);
            edges.push(DepEdge {
                from: from.to_string(),
                to: to.to_string(),
                kind: kind.to_string(),
                location: format!("{shown}:{line}"),
            });
        }
    }
    edges
}

/// The line declaring `key` in the manifest's table for `kind`.
fn manifest_line(text: &str, kind: &str, key: &str) -> Option<usize> {
    let table = match kind {
        "dev" => "dev-dependencies]",
        "build" => "build-dependencies]",
        _ => "dependencies]",
    };
    let mut inside = false;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            let plain = trimmed.trim_start_matches('[');
            inside = plain == table || plain.ends_with(&format!(".{table}"));
            if kind == "normal" {
                inside &= !plain.contains("dev-") && !plain.contains("build-");
            }
            continue;
        }
        if inside
            && let Some(rest) = trimmed.strip_prefix(key)
            && rest.trim_start().starts_with(['=', '.'])
        {
            return Some(n + 1);
        }
    }
    None
}

fn layer_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&name))
}

/// Checks every edge against the rules in this module's doc.
pub(crate) fn check(edges: &[DepEdge]) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut fail = |edge: &DepEdge, why: String| {
        findings.push(Finding {
            location: edge.location.clone(),
            rule: "layers",
            message: format!("{} -> {} ({}): {why}", edge.from, edge.to, edge.kind),
        });
    };
    for edge in edges {
        let (from, to) = (edge.from.as_str(), edge.to.as_str());
        if TOOLS.contains(&to) {
            fail(edge, format!("{to} is a tool; no crate may depend on it"));
            continue;
        }
        if to == TEST_SUPPORT {
            if edge.kind != "dev" {
                fail(edge, format!("{TEST_SUPPORT} is a dev-dependency only"));
            }
            continue;
        }
        if TOOLS.contains(&from) || from == TEST_SUPPORT {
            continue;
        }
        if let Some((_, allowed)) = ONLY_FOR.iter().find(|(name, _)| *name == to)
            && !allowed.contains(&from)
        {
            fail(
                edge,
                format!("only {} may depend on {to}", allowed.join(" and ")),
            );
            continue;
        }
        let (Some(high), Some(low)) = (layer_of(from), layer_of(to)) else {
            let unknown = if layer_of(from).is_none() { from } else { to };
            fail(
                edge,
                format!(
                    "{unknown} is not in the layer table (xtask/src/arch/layers.rs): add it where docs/architecture.md places it"
                ),
            );
            continue;
        };
        if low < high {
            continue;
        }
        if low > high {
            fail(
                edge,
                format!(
                    "dependencies point down the layers of docs/architecture.md, but {to} (layer {low}) is above {from} (layer {high})"
                ),
            );
            continue;
        }
        let depends_back = edges.iter().any(|e| e.from == to && e.to == from);
        let why = if edge.kind != "dev" {
            format!(
                "{from} and {to} are siblings on layer {low}; only a dev-dependency may join siblings"
            )
        } else if low == BACKENDS {
            "the backends never depend on each other, not even in tests; they meet only in abridge"
                .to_string()
        } else if depends_back {
            format!("{to} depends back on {from}")
        } else {
            continue;
        };
        fail(edge, why);
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::DepEdge;
    use super::check;
    use super::manifest_line;

    fn edge(from: &str, to: &str, kind: &str) -> DepEdge {
        DepEdge {
            from: from.to_string(),
            to: to.to_string(),
            kind: kind.to_string(),
            location: "Cargo.toml:1".to_string(),
        }
    }

    fn verdicts(edges: &[DepEdge]) -> Vec<String> {
        check(edges).into_iter().map(|f| f.message).collect()
    }

    #[test]
    fn downward_edges_pass_and_upward_ones_fail() {
        assert!(verdicts(&[edge("abridge-compact", "abridge-session", "normal")]).is_empty());
        let found = verdicts(&[edge("abridge-session", "abridge-compact", "normal")]);
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("is above"), "{found:?}");
        assert_eq!(
            verdicts(&[edge("abridge-session", "abridge-compact", "dev")]).len(),
            1
        );
    }

    #[test]
    fn siblings_meet_only_through_one_way_dev_dependencies() {
        assert!(verdicts(&[edge("abridge-meter", "abridge-import", "dev")]).is_empty());
        assert_eq!(
            verdicts(&[edge("abridge-meter", "abridge-import", "normal")]).len(),
            1
        );
        let both_ways = [
            edge("abridge-meter", "abridge-import", "dev"),
            edge("abridge-import", "abridge-meter", "dev"),
        ];
        assert_eq!(verdicts(&both_ways).len(), 2);
        assert_eq!(
            verdicts(&[edge("abridge-prune", "abridge-snapcompact", "dev")]).len(),
            1
        );
    }

    #[test]
    fn test_support_tools_and_the_postgres_store_have_their_own_rules() {
        assert!(verdicts(&[edge("abridge-llm", "abridge-test-support", "dev")]).is_empty());
        assert_eq!(
            verdicts(&[edge("abridge-llm", "abridge-test-support", "normal")]).len(),
            1
        );
        assert!(verdicts(&[edge("xtask", "abridge", "normal")]).is_empty());
        assert_eq!(verdicts(&[edge("abridge", "xtask", "dev")]).len(), 1);
        assert!(verdicts(&[edge("abridge-serve", "abridge-store-postgres", "normal")]).is_empty());
        assert_eq!(
            verdicts(&[edge("abridge-compact", "abridge-store-postgres", "normal")]).len(),
            1
        );
        assert_eq!(
            verdicts(&[edge("abridge-new", "abridge-llm", "normal")]).len(),
            1
        );
    }

    #[test]
    fn manifest_lines_are_found_in_the_right_table() {
        let text = "[dependencies]\nabridge-llm = { workspace = true }\n\n[dev-dependencies]\nabridge-llm.workspace = true\n";
        assert_eq!(manifest_line(text, "normal", "abridge-llm"), Some(2));
        assert_eq!(manifest_line(text, "dev", "abridge-llm"), Some(5));
        assert_eq!(manifest_line(text, "build", "abridge-llm"), None);
    }
}
