//! The packaging rule: a crate that can be published carries what it
//! needs.
//!
//! `cargo package` copies only the crate's own directory, so a file that
//! `include_str!` or `include_bytes!` reaches outside it (a prompt in the
//! repository's root, a font under `assets/`) builds in the workspace and
//! breaks in the package. `cargo package --no-verify` does not compile, so
//! it cannot see that; this rule reads the paths instead. An include under
//! `#[cfg(doctest)]` (a guide compiled as a doctest) is exempt: a package
//! never builds it. A publishable manifest also names what crates.io and
//! docs.rs show: description, licence, repository, readme, keywords and
//! categories.

use std::path::Component;
use std::path::Path;
use std::path::PathBuf;

/// The manifest keys a publishable crate sets, each either itself or as
/// `KEY.workspace = true`.
pub(crate) const REQUIRED_KEYS: [&str; 6] = [
    "description",
    "license",
    "repository",
    "readme",
    "keywords",
    "categories",
];

/// Whether the manifest's text says `publish = false`.
pub(crate) fn unpublished(manifest: &str) -> bool {
    manifest
        .lines()
        .any(|line| line.replace(' ', "") == "publish=false")
}

/// The required keys the manifest's `[package]` table lacks.
pub(crate) fn missing_keys(manifest: &str) -> Vec<&'static str> {
    let package: Vec<&str> = manifest
        .lines()
        .skip_while(|line| line.trim() != "[package]")
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .collect();
    REQUIRED_KEYS
        .into_iter()
        .filter(|key| {
            !package.iter().any(|line| {
                let line = line.trim_start();
                line.starts_with(&format!("{key} "))
                    || line.starts_with(&format!("{key}."))
                    || line.starts_with(&format!("{key}="))
            })
        })
        .collect()
}

/// Every `include_str!`/`include_bytes!` literal path in `text` with its
/// line, leaving out those under a `#[cfg(doctest)]` attribute on one of
/// the two lines before.
pub(crate) fn includes(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        for macro_name in ["include_str!(\"", "include_bytes!(\""] {
            let mut rest = *line;
            while let Some(at) = rest.find(macro_name) {
                rest = &rest[at + macro_name.len()..];
                let Some(end) = rest.find('"') else { break };
                let doctest_only = lines[index.saturating_sub(2)..index]
                    .iter()
                    .any(|before| before.contains("cfg(doctest)"));
                if !doctest_only {
                    found.push((index + 1, rest[..end].to_string()));
                }
                rest = &rest[end..];
            }
        }
    }
    found
}

/// `relative` joined to `dir`, with `..` and `.` folded away (no
/// filesystem access, so a missing file still resolves).
pub(crate) fn resolve(dir: &Path, relative: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for component in dir.join(relative).components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_include_that_leaves_the_crate_is_found_and_a_doctest_one_is_not() {
        let text = "const A: &str = include_str!(\"../prompts/a.md\");\n\
                    #[cfg(doctest)]\n#[doc = include_str!(\"../../../docs/guide.md\")]\nstruct G;\n\
                    static F: &[u8] = include_bytes!(\"../../../assets/f.ttf\");\n";
        let found = includes(text);
        assert_eq!(
            found,
            vec![
                (1, "../prompts/a.md".to_string()),
                (5, "../../../assets/f.ttf".to_string())
            ]
        );
        let src = Path::new("/w/crates/x/src");
        assert!(resolve(src, &found[0].1).starts_with("/w/crates/x"));
        assert!(!resolve(src, &found[1].1).starts_with("/w/crates/x"));
    }

    #[test]
    fn a_manifest_without_keywords_is_told_so() {
        let manifest = "[package]\nname = \"x\"\ndescription = \"d\"\nlicense.workspace = true\n\
                        repository.workspace = true\nreadme = \"README.md\"\ncategories = []\n\
                        [dependencies]\nkeywords = 1\n";
        assert_eq!(missing_keys(manifest), vec!["keywords"]);
        assert!(!unpublished(manifest));
        assert!(unpublished("[package]\npublish = false\n"));
    }
}
