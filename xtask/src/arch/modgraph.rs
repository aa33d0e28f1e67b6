//! The module graph of one crate target and its import circles.
//!
//! Nodes are the crate's file modules: its top-level modules and the
//! submodules of directory modules (inline modules belong to their file).
//! An edge `a -> b` is a path in `a`'s non-test code that reaches `b`,
//! directly (`crate::b::x`, `super::b`) or through a `pub use` that
//! re-exports an item of `b` (`crate::X` where the root says
//! `pub use b::X`). Edges between a module and its own ancestor do not
//! count: a parent declares and re-exports its children, and children use
//! what their parent defines; that is one unit, not a circle.
//!
//! Test modules (declared under `#[cfg(test)]`, or inside one) are not
//! nodes.

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;

use super::items::FileScan;
use super::items::PathRef;
use super::items::scan;

/// One file module.
#[derive(Debug)]
pub(crate) struct Module {
    /// Names from the crate root (`[]` for the root itself).
    pub(crate) path: Vec<String>,
    /// The file it lives in.
    pub(crate) file: PathBuf,
    /// Compiled only in test builds.
    pub(crate) test: bool,
    /// The scan of its file.
    pub(crate) scan: FileScan,
    children: BTreeMap<String, usize>,
}

impl Module {
    /// `a::b` style name, `crate` for the root.
    pub(crate) fn name(&self) -> String {
        if self.path.is_empty() {
            "crate".to_string()
        } else {
            self.path.join("::")
        }
    }
}

/// The modules of one crate target (a library or a binary), root first.
#[derive(Debug)]
pub(crate) struct Tree {
    /// Every module reached from the root by `mod` declarations.
    pub(crate) modules: Vec<Module>,
}

/// An edge of the graph at the place that first makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edge {
    /// Index of the importing module.
    pub(crate) from: usize,
    /// Index of the imported module.
    pub(crate) to: usize,
    /// The first line of `from`'s file that makes the edge.
    pub(crate) line: usize,
}

/// Reads a file's text; `None` when it is not there.
pub(crate) type Reader<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// Follows the `mod` declarations from `root_file`. A declared module
/// whose file is missing is skipped (it would not compile; the compiler
/// says so better).
pub(crate) fn load(root_file: &Path, read: Reader<'_>) -> Tree {
    let mut tree = Tree {
        modules: Vec::new(),
    };
    let Some(text) = read(root_file) else {
        return tree;
    };
    let root_scan = scan(&text);
    let test = root_scan.test_only;
    tree.modules.push(Module {
        path: Vec::new(),
        file: root_file.to_path_buf(),
        test,
        scan: root_scan,
        children: BTreeMap::new(),
    });
    let mut queue = vec![0];
    while let Some(parent) = queue.pop() {
        let decls = tree.modules[parent].scan.mods.clone();
        for decl in decls {
            let file = &tree.modules[parent].file;
            let Some((child_file, text)) =
                child_candidates(file, parent == 0, &decl.name, decl.path.as_deref())
                    .into_iter()
                    .find_map(|candidate| read(&candidate).map(|text| (candidate, text)))
            else {
                continue;
            };
            let child_scan = scan(&text);
            let mut path = tree.modules[parent].path.clone();
            path.push(decl.name.clone());
            let index = tree.modules.len();
            tree.modules.push(Module {
                path,
                file: child_file,
                test: tree.modules[parent].test || decl.test || child_scan.test_only,
                scan: child_scan,
                children: BTreeMap::new(),
            });
            tree.modules[parent].children.insert(decl.name, index);
            queue.push(index);
        }
    }
    tree
}

/// Where `mod name;` declared in `parent` may live. The crate root and
/// `mod.rs` files own their directory; `foo.rs` owns `foo/`. A `#[path]`
/// is relative to the declaring file's directory.
fn child_candidates(parent: &Path, is_root: bool, name: &str, path: Option<&str>) -> Vec<PathBuf> {
    let dir = parent.parent().unwrap_or(Path::new("."));
    if let Some(path) = path {
        return vec![dir.join(path)];
    }
    let owns_dir = is_root || parent.file_name().is_some_and(|f| f == "mod.rs");
    let base = if owns_dir {
        dir.to_path_buf()
    } else {
        let stem = parent
            .file_stem()
            .map(|s| s.to_os_string())
            .unwrap_or_default();
        dir.join(stem)
    };
    vec![
        base.join(format!("{name}.rs")),
        base.join(name).join("mod.rs"),
    ]
}

impl Tree {
    /// The module a path written in module `from` reaches, following
    /// re-exports; `None` for paths into other crates.
    fn resolve(&self, from: usize, path: &PathRef, depth: u8) -> Option<usize> {
        let (first, rest) = path.segments.split_first()?;
        let mut here = self.modules[from].path.clone();
        here.extend(path.inline.iter().cloned());
        let mut full = match first.as_str() {
            "crate" => Vec::new(),
            "self" => here,
            "super" => {
                here.pop()?;
                here
            }
            name => {
                let child_of_file =
                    path.inline.is_empty() && self.modules[from].children.contains_key(name);
                if !child_of_file {
                    return None;
                }
                let mut full = here;
                full.push(name.to_string());
                full
            }
        };
        let mut rest = rest.iter().peekable();
        if first == "super" {
            while rest.peek().is_some_and(|s| *s == "super") {
                full.pop()?;
                rest.next();
            }
        }
        full.extend(rest.cloned());
        let mut node = 0;
        let mut taken = 0;
        while let Some(&child) = full
            .get(taken)
            .and_then(|s| self.modules[node].children.get(s))
        {
            node = child;
            taken += 1;
        }
        if let Some(item) = full.get(taken)
            && depth < 8
            && let Some(export) = self.modules[node]
                .scan
                .reexports
                .iter()
                .find(|r| &r.name == item)
            && let Some(target) = self.resolve(node, &export.target, depth + 1)
        {
            return Some(target);
        }
        Some(node)
    }

    fn is_ancestor(&self, a: usize, b: usize) -> bool {
        let (a, b) = (&self.modules[a].path, &self.modules[b].path);
        a.len() < b.len() && b.starts_with(a)
    }

    /// Every edge between non-test modules, each at the first line that
    /// makes it, in file order.
    pub(crate) fn edges(&self) -> Vec<Edge> {
        let mut first: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        for (from, module) in self.modules.iter().enumerate() {
            if module.test {
                continue;
            }
            for path in &module.scan.refs {
                let Some(to) = self.resolve(from, path, 0) else {
                    continue;
                };
                if to == from
                    || self.modules[to].test
                    || self.is_ancestor(to, from)
                    || self.is_ancestor(from, to)
                {
                    continue;
                }
                let line = first.entry((from, to)).or_insert(path.line);
                *line = (*line).min(path.line);
            }
        }
        first
            .into_iter()
            .map(|((from, to), line)| Edge { from, to, line })
            .collect()
    }

    /// The strongly connected components with more than one module, each
    /// with the edges inside it: every one of them is an import circle.
    pub(crate) fn circles(&self) -> Vec<Vec<Edge>> {
        let edges = self.edges();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); self.modules.len()];
        for edge in &edges {
            next[edge.from].push(edge.to);
        }
        components(&next)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|component| {
                edges
                    .iter()
                    .filter(|e| component.contains(&e.from) && component.contains(&e.to))
                    .cloned()
                    .collect()
            })
            .collect()
    }
}

/// Tarjan's strongly connected components over an adjacency list.
fn components(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        next: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        found: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.next[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(w_index) if s.on_stack[w] => s.low[v] = s.low[v].min(w_index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            component.sort_unstable();
            s.found.push(component);
        }
    }
    let n = next.len();
    let mut state = State {
        next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.found.sort();
    state.found
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::Tree;
    use super::load;

    fn tree(files: &[(&str, &str)]) -> Tree {
        let files: HashMap<&Path, String> = files
            .iter()
            .map(|(path, text)| (Path::new(*path), (*text).to_string()))
            .collect();
        load(Path::new("src/lib.rs"), &|p: &Path| files.get(p).cloned())
    }

    fn circles(tree: &Tree) -> Vec<Vec<String>> {
        tree.circles()
            .iter()
            .map(|edges| {
                edges
                    .iter()
                    .map(|e| {
                        format!(
                            "{}->{}@{}",
                            tree.modules[e.from].name(),
                            tree.modules[e.to].name(),
                            e.line
                        )
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_circle_is_found_with_the_lines_that_close_it() {
        let tree = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\nmod c;"),
            ("src/a.rs", "use crate::b::B;"),
            ("src/b.rs", "\nfn f() { crate::a::g() }"),
            ("src/c.rs", "use crate::a::A;"),
        ]);
        assert_eq!(circles(&tree), [["a->b@1", "b->a@2"]]);
    }

    #[test]
    fn reexports_lead_to_the_defining_module() {
        let tree = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\npub use a::A;\npub use b::B;"),
            ("src/a.rs", "use crate::B;"),
            ("src/b.rs", "use crate::{A, b_local};"),
        ]);
        assert_eq!(circles(&tree), [["a->b@1", "b->a@1"]]);
    }

    #[test]
    fn directory_submodules_are_nodes_and_parents_are_not_circles() {
        let tree = tree(&[
            ("src/lib.rs", "mod store;"),
            (
                "src/store/mod.rs",
                "mod blob;\nmod jsonl;\npub use jsonl::Jsonl;\npub trait Store {}",
            ),
            (
                "src/store/blob.rs",
                "use super::Store;\nuse super::jsonl::create;",
            ),
            (
                "src/store/jsonl.rs",
                "use super::Store;\nuse super::blob::{externalize, resolve};",
            ),
        ]);
        assert_eq!(
            circles(&tree),
            [["store::blob->store::jsonl@2", "store::jsonl->store::blob@2"]]
        );
    }

    #[test]
    fn a_circle_closed_only_by_tests_is_no_circle() {
        let tree = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod a_tests;"),
            ("src/a.rs", "use crate::b::B;"),
            (
                "src/b.rs",
                "#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}",
            ),
            ("src/a_tests.rs", "use crate::a::A;\nuse crate::b::B;"),
        ]);
        assert!(circles(&tree).is_empty());
        assert!(tree.modules.iter().any(|m| m.name() == "a_tests" && m.test));
    }

    #[test]
    fn super_inside_a_file_module_reaches_siblings() {
        let tree = tree(&[
            ("src/lib.rs", "mod a;\nmod b;"),
            ("src/a.rs", "mod inner {\n    use super::super::b::B;\n}"),
            ("src/b.rs", "use super::a;"),
        ]);
        assert_eq!(circles(&tree), [["a->b@2", "b->a@1"]]);
    }
}
