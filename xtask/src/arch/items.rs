//! What `lint-arch` needs from one source file: its `mod` declarations,
//! every path into the crate it uses (`use crate::...`, `use super::...`,
//! grouped `use` trees, and `crate::x::y` / `super::x` written inline), its
//! `pub use` re-exports, and the line ranges of its `#[cfg(test)]` modules.
//!
//! Code that exists only in test builds does not count: anything under an
//! item marked `#[cfg(test)]` (or `#[cfg(all(test, ...))]`) is skipped, so
//! a `use` inside `#[cfg(test)] mod tests` adds no edge.

use super::lexer::Kind;
use super::lexer::Token;
use super::lexer::tokenize;

/// A `mod name;` declaration (a module in another file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModDecl {
    /// The module's name.
    pub(crate) name: String,
    /// A `#[path = "..."]` attribute's value, if any.
    pub(crate) path: Option<String>,
    /// Whether the declaration is compiled only in test builds.
    pub(crate) test: bool,
}

/// A path that starts at `crate`, `super`, `self` or a plain name (which
/// may name a child module or another crate: the module graph decides).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathRef {
    /// The segments as written, first one included; a use tree is expanded
    /// so each leaf has its own path.
    pub(crate) segments: Vec<String>,
    /// The inline (non-test) modules of this file the path is written in,
    /// outermost first: `super::` counts from there.
    pub(crate) inline: Vec<String>,
    /// The line it is written on.
    pub(crate) line: usize,
}

/// A `pub use` (of any visibility but private) at file scope: `name` is
/// reachable through this module but lives at `target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reexport {
    /// The name it is exported under (the alias after `as`, if any).
    pub(crate) name: String,
    /// Where it comes from.
    pub(crate) target: PathRef,
}

/// The scan of one file.
#[derive(Debug, Default)]
pub(crate) struct FileScan {
    /// Out-of-line child modules.
    pub(crate) mods: Vec<ModDecl>,
    /// Paths used by non-test code.
    pub(crate) refs: Vec<PathRef>,
    /// Re-exports at file scope.
    pub(crate) reexports: Vec<Reexport>,
    /// Inclusive line ranges of inline `#[cfg(test)]` modules, from the
    /// first attribute line to the closing brace.
    pub(crate) test_modules: Vec<(usize, usize)>,
    /// The file opens with `#![cfg(test)]`: all of it is test code.
    pub(crate) test_only: bool,
}

/// Attributes seen since the last item boundary.
#[derive(Debug, Default)]
struct Pending {
    test: bool,
    path: Option<String>,
    first_line: Option<usize>,
}

/// One open brace.
#[derive(Debug)]
struct Scope {
    test: bool,
    /// `Some((name, first line, test))` when this brace opens `mod name {`.
    module: Option<(String, usize)>,
}

/// Scans one file's source.
pub(crate) fn scan(source: &str) -> FileScan {
    let tokens = tokenize(source);
    let mut out = FileScan::default();
    let mut scopes: Vec<Scope> = Vec::new();
    let mut pending = Pending::default();
    let mut i = 0;
    while i < tokens.len() {
        let in_test = pending.test || scopes.last().is_some_and(|s| s.test);
        let token = &tokens[i];
        if token.is_punct('#') {
            let inner = tokens.get(i + 1).is_some_and(|t| t.is_punct('!'));
            let open = if inner { i + 2 } else { i + 1 };
            if tokens.get(open).is_some_and(|t| t.is_punct('[')) {
                let close = matching(&tokens, open, '[', ']');
                let body = &tokens[open + 1..close.min(tokens.len())];
                if inner {
                    out.test_only |= scopes.is_empty() && is_cfg_test(body);
                } else {
                    pending.test |= is_cfg_test(body);
                    pending.path = pending.path.take().or_else(|| path_attr(body));
                    pending.first_line.get_or_insert(token.line);
                }
                i = close + 1;
                continue;
            }
        }
        if token.is_ident("mod")
            && let (Some(name), Some(next)) =
                (tokens.get(i + 1).and_then(Token::ident), tokens.get(i + 2))
        {
            let first_line = pending.first_line.unwrap_or(token.line);
            if next.is_punct(';') {
                if scopes.is_empty() {
                    out.mods.push(ModDecl {
                        name: name.to_string(),
                        path: pending.path.take(),
                        test: in_test,
                    });
                }
                pending = Pending::default();
                i += 3;
                continue;
            }
            if next.is_punct('{') {
                scopes.push(Scope {
                    test: in_test,
                    module: Some((name.to_string(), first_line)),
                });
                pending = Pending::default();
                i += 3;
                continue;
            }
        }
        if token.is_ident("use") {
            let end = statement_end(&tokens, i);
            if !in_test {
                let inline = inline_path(&scopes);
                let mut leaves = Vec::new();
                let mut cursor = i + 1;
                if tokens.get(cursor).is_some_and(|t| t.kind == Kind::PathSep) {
                    cursor = end; // `use ::other_crate::...`: never ours
                }
                if cursor < end {
                    use_tree(&tokens[..end], &mut cursor, Vec::new(), &mut leaves);
                }
                let public = scopes.is_empty() && is_public(&tokens, i);
                for (segments, alias, line) in leaves {
                    let path = PathRef {
                        segments,
                        inline: inline.clone(),
                        line,
                    };
                    if public {
                        out.reexports.push(Reexport {
                            name: alias,
                            target: path.clone(),
                        });
                    }
                    out.refs.push(path);
                }
            }
            pending = Pending::default();
            i = end + 1;
            continue;
        }
        if let Some(base) = token.ident()
            && matches!(base, "crate" | "super" | "self")
            && tokens.get(i + 1).is_some_and(|t| t.kind == Kind::PathSep)
            && (i == 0 || tokens[i - 1].kind != Kind::PathSep)
        {
            let mut segments = vec![base.to_string()];
            let mut j = i + 2;
            while let Some(name) = tokens.get(j).and_then(Token::ident) {
                segments.push(name.to_string());
                if tokens.get(j + 1).is_some_and(|t| t.kind == Kind::PathSep) {
                    j += 2;
                } else {
                    j += 1;
                    break;
                }
            }
            if !in_test {
                out.refs.push(PathRef {
                    segments,
                    inline: inline_path(&scopes),
                    line: token.line,
                });
            }
            i = j.max(i + 1);
            continue;
        }
        match &token.kind {
            Kind::Punct('{') => {
                scopes.push(Scope {
                    test: in_test,
                    module: None,
                });
                pending = Pending::default();
            }
            Kind::Punct('}') => {
                if let Some(Scope {
                    test: true,
                    module: Some((_, first)),
                }) = scopes.pop()
                    && !scopes.last().is_some_and(|s| s.test)
                {
                    out.test_modules.push((first, token.line));
                }
                pending = Pending::default();
            }
            Kind::Punct(';' | ',') => pending = Pending::default(),
            _ => {}
        }
        i += 1;
    }
    out
}

/// The names of the open inline modules, outermost first.
fn inline_path(scopes: &[Scope]) -> Vec<String> {
    scopes
        .iter()
        .filter_map(|s| s.module.as_ref().map(|(name, _)| name.clone()))
        .collect()
}

/// The index of the token closing the bracket opened at `open`, or the
/// end of the tokens.
fn matching(tokens: &[Token], open: usize, opening: char, closing: char) -> usize {
    let mut depth = 0usize;
    for (k, token) in tokens.iter().enumerate().skip(open) {
        if token.is_punct(opening) {
            depth += 1;
        } else if token.is_punct(closing) {
            depth -= 1;
            if depth == 0 {
                return k;
            }
        }
    }
    tokens.len()
}

/// The `;` ending the `use` at `start` (or the end of the tokens).
fn statement_end(tokens: &[Token], start: usize) -> usize {
    tokens[start..]
        .iter()
        .position(|t| t.is_punct(';'))
        .map_or(tokens.len(), |k| start + k)
}

/// `cfg(test)` or `cfg(all(..., test, ...))`: compiled only for tests.
/// `cfg(any(test, ...))` and `cfg(not(test))` are not.
fn is_cfg_test(body: &[Token]) -> bool {
    if !(body.first().is_some_and(|t| t.is_ident("cfg"))
        && body.get(1).is_some_and(|t| t.is_punct('(')))
    {
        return false;
    }
    if body.get(2).is_some_and(|t| t.is_ident("test"))
        && body.get(3).is_some_and(|t| t.is_punct(')'))
    {
        return true;
    }
    if body.get(2).is_some_and(|t| t.is_ident("all"))
        && body.get(3).is_some_and(|t| t.is_punct('('))
    {
        let close = matching(body, 3, '(', ')');
        let mut depth = 0usize;
        for (k, token) in body.iter().enumerate().take(close).skip(4) {
            match &token.kind {
                Kind::Punct('(') => depth += 1,
                Kind::Punct(')') => depth = depth.saturating_sub(1),
                Kind::Ident(name)
                    if name == "test"
                        && depth == 0
                        && !body.get(k + 1).is_some_and(|t| t.is_punct('=')) =>
                {
                    return true;
                }
                _ => {}
            }
        }
    }
    false
}

/// `path = "..."`.
fn path_attr(body: &[Token]) -> Option<String> {
    match body {
        [name, eq, value] if name.is_ident("path") && eq.is_punct('=') => match &value.kind {
            Kind::Str(text) => Some(text.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Whether the `use` at `at` carries a visibility (`pub`, `pub(crate)`,
/// `pub(super)`, `pub(in path)`): only those re-export.
fn is_public(tokens: &[Token], at: usize) -> bool {
    if at >= 1 && tokens[at - 1].is_ident("pub") {
        return true;
    }
    if at >= 1 && tokens[at - 1].is_punct(')') {
        let start = at.saturating_sub(8);
        return tokens[start..at - 1]
            .windows(2)
            .any(|w| w[0].is_ident("pub") && w[1].is_punct('('));
    }
    false
}

/// Expands the use tree starting at `cursor` into leaves of (full path,
/// name it binds, line). `self` in a group names the prefix itself; a glob
/// binds `*`.
fn use_tree(
    tokens: &[Token],
    cursor: &mut usize,
    prefix: Vec<String>,
    leaves: &mut Vec<(Vec<String>, String, usize)>,
) {
    let mut segments = prefix;
    while let Some(token) = tokens.get(*cursor) {
        let line = token.line;
        if token.is_punct('{') {
            *cursor += 1;
            while let Some(t) = tokens.get(*cursor) {
                if t.is_punct('}') {
                    *cursor += 1;
                    return;
                }
                if t.is_punct(',') {
                    *cursor += 1;
                    continue;
                }
                let before = *cursor;
                use_tree(tokens, cursor, segments.clone(), leaves);
                if *cursor == before {
                    *cursor += 1;
                }
            }
            return;
        }
        if token.is_punct('*') {
            *cursor += 1;
            leaves.push((segments, "*".to_string(), line));
            return;
        }
        let Some(name) = token.ident() else {
            return;
        };
        *cursor += 1;
        if tokens.get(*cursor).is_some_and(|t| t.kind == Kind::PathSep) {
            segments.push(name.to_string());
            *cursor += 1;
            continue;
        }
        let mut bound = name.to_string();
        if name != "self" || segments.is_empty() {
            segments.push(name.to_string());
        } else if let Some(last) = segments.last() {
            bound = last.clone();
        }
        if tokens.get(*cursor).is_some_and(|t| t.is_ident("as"))
            && let Some(alias) = tokens.get(*cursor + 1).and_then(Token::ident)
        {
            bound = alias.to_string();
            *cursor += 2;
        }
        leaves.push((segments, bound, line));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::scan;

    fn refs(source: &str) -> Vec<String> {
        scan(source)
            .refs
            .iter()
            .map(|r| format!("{}@{}", r.segments.join("::"), r.line))
            .collect()
    }

    #[test]
    fn grouped_uses_expand_to_one_path_per_leaf() {
        let source = "use crate::{a::X, b::{self, Y as Z}, c::*};\nuse super::d;";
        assert_eq!(
            refs(source),
            [
                "crate::a::X@1",
                "crate::b@1",
                "crate::b::Y@1",
                "crate::c@1",
                "super::d@2"
            ]
        );
    }

    #[test]
    fn inline_paths_count_but_intra_doc_links_do_not() {
        let source =
            "/// See [`x`](crate::docs::x).\nfn f() { crate::txn::is_live(1); super::g::h() }";
        assert_eq!(refs(source), ["crate::txn::is_live@2", "super::g::h@2"]);
    }

    #[test]
    fn imports_under_cfg_test_are_ignored() {
        let source = "use crate::a::A;\n#[cfg(test)]\nuse crate::b::B;\n#[cfg(test)]\nmod tests {\n    use crate::c::C;\n    fn t() { crate::d::D; }\n}\n#[cfg(all(test, feature = \"x\"))]\nfn helper() { crate::e::E; }\n#[cfg(any(test, feature = \"y\"))]\nfn kept() { crate::f::F; }";
        let scanned = scan(source);
        assert_eq!(refs(source), ["crate::a::A@1", "crate::f::F@12"]);
        assert_eq!(scanned.test_modules, [(4, 8)]);
    }

    #[test]
    fn mod_declarations_keep_their_test_flag_and_path() {
        let source = "pub mod a;\n#[cfg(test)]\nmod a_tests;\n#[path = \"x/y.rs\"]\nmod b;\nfn f() { mod inner; }";
        let mods = scan(source).mods;
        let summary: Vec<_> = mods
            .iter()
            .map(|m| (m.name.as_str(), m.test, m.path.as_deref()))
            .collect();
        assert_eq!(
            summary,
            [
                ("a", false, None),
                ("a_tests", true, None),
                ("b", false, Some("x/y.rs"))
            ]
        );
    }

    #[test]
    fn only_visible_uses_at_file_scope_reexport() {
        let source = "pub use events::Start;\npub(crate) use plan::Span as S;\nuse txn::Live;\nfn f() { pub use x::Y; }";
        let names: Vec<_> = scan(source)
            .reexports
            .iter()
            .map(|r| format!("{}={}", r.name, r.target.segments.join("::")))
            .collect();
        assert_eq!(names, ["Start=events::Start", "S=plan::Span"]);
    }

    #[test]
    fn paths_in_inline_modules_know_where_they_are() {
        let source = "mod outer {\n    use super::a::B;\n}";
        let scanned = scan(source);
        assert_eq!(scanned.refs[0].inline, ["outer"]);
        assert!(scanned.test_modules.is_empty());
    }
}
