//! The method registry: the one table that knows compaction methods by
//! name.
//!
//! Everything that names a method asks this table: building the settings'
//! `method_order`, checking a settings file's and the command line's
//! names, the list of known methods in their errors, and the request
//! builder's send-time expansions. What a method *is* (calls a model,
//! runs on overflow, is speculated) it says itself
//! ([`CompactionMethod::capabilities`]); nothing outside this table
//! matches a method's name.
//!
//! A host adds its own method with [`MethodRegistry::register`]: the name
//! then goes in `method_order`, in settings files read with
//! [`Settings::load_using`], in [`HarnessBuilder::registry`](crate::HarnessBuilder::registry),
//! in a manual pass and, for a binary that embeds the command line, in
//! `--method` (docs/writing-a-compaction-method.md walks through one).

use std::sync::Arc;
use std::sync::LazyLock;

use abridge_compact::CompactionMethod;
use abridge_compact::ErrorKind;
use abridge_compact::host::CheckpointExpansion;
use abridge_compact::host::MethodFailure;

use crate::methods;
use crate::methods::BuildResult;
use crate::methods::MethodContext;
use crate::methods::MethodSources;
use crate::settings::Settings;

type Builder = Arc<dyn Fn(MethodContext<'_>) -> BuildResult + Send + Sync>;

/// One built-in method: its name and how to build it.
struct Builtin {
    name: &'static str,
    build: fn(&str, MethodContext<'_>) -> BuildResult,
}

/// The built-in methods, in the order their names are listed in errors.
/// Adding a method is one line here and the method's own file.
const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "prune",
        build: methods::reclaim,
    },
    Builtin {
        name: "remote",
        build: methods::remote,
    },
    Builtin {
        name: "snapcompact",
        build: methods::snapcompact,
    },
    Builtin {
        name: "handoff",
        build: methods::handoff,
    },
    Builtin {
        name: "shake",
        build: methods::reclaim,
    },
    Builtin {
        name: "soft",
        build: methods::soft,
    },
    Builtin {
        name: "digest",
        build: methods::digest,
    },
    Builtin {
        name: "trim",
        build: methods::reclaim,
    },
    Builtin {
        name: "mask",
        build: methods::reclaim,
    },
];

const BUILTIN_NAMES: [&str; BUILTINS.len()] = {
    let mut names = [""; BUILTINS.len()];
    let mut i = 0;
    while i < BUILTINS.len() {
        names[i] = BUILTINS[i].name;
        i += 1;
    }
    names
};

/// The built-in methods' names, read from the registry's table (a
/// host's registry may know more: ask [`MethodRegistry::names`]).
pub const KNOWN_METHODS: &[&str] = &BUILTIN_NAMES;

/// The built-in registry, built once.
static BUILTIN: LazyLock<MethodRegistry> = LazyLock::new(MethodRegistry::new_builtin);

/// The built-in registry, shared.
pub(crate) fn builtin() -> &'static MethodRegistry {
    &BUILTIN
}

/// A registration the registry refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The name is already registered (built-in names included).
    #[error("method {name:?} is already registered")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// The name cannot be written in a settings file or after `--method`.
    #[error("method name {name:?} {reason}")]
    BadName {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An expansion for a name no method is registered under.
    #[error("no method {name:?} is registered to expand checkpoints for")]
    Unregistered {
        /// The name.
        name: String,
    },
}

struct Entry {
    name: String,
    build: Builder,
}

/// The methods a host can name, and how each is built; the send-time
/// expansions of the methods that store more than text.
///
/// [`MethodRegistry::default`] is the built-in table.
#[derive(Clone)]
pub struct MethodRegistry {
    entries: Vec<Entry>,
    expansions: Vec<Arc<dyn CheckpointExpansion>>,
}

impl Clone for Entry {
    fn clone(&self) -> Self {
        Entry {
            name: self.name.clone(),
            build: Arc::clone(&self.build),
        }
    }
}

impl std::fmt::Debug for MethodRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MethodRegistry")
            .field("methods", &self.names())
            .field("expansions", &self.expansions)
            .finish()
    }
}

impl Default for MethodRegistry {
    fn default() -> Self {
        builtin().clone()
    }
}

impl MethodRegistry {
    /// The built-in methods and their expansions.
    pub fn builtin() -> Self {
        Self::default()
    }

    fn new_builtin() -> Self {
        let mut registry = MethodRegistry {
            entries: Vec::new(),
            expansions: Vec::new(),
        };
        for builtin in BUILTINS {
            let build = builtin.build;
            let name = builtin.name;
            registry.entries.push(Entry {
                name: name.to_string(),
                build: Arc::new(move |context| build(name, context)),
            });
        }
        // Asked in this order; each answers only for its own checkpoints.
        registry
            .expansions
            .push(Arc::new(abridge_compact_basic::NativeReplay));
        #[cfg(feature = "snapcompact")]
        registry
            .expansions
            .push(Arc::new(abridge_snapcompact::FrameExpansion));
        #[cfg(not(feature = "snapcompact"))]
        registry
            .expansions
            .push(Arc::new(crate::request::frames::NoFrameRenderer));
        registry
    }

    /// Adds a method under `name`, built by `build` whenever an order
    /// names it. The name must be new, non-empty, and made of ASCII
    /// letters, digits, `-` and `_` (it is written in settings files and
    /// after `--method a,b`).
    ///
    /// # Errors
    /// [`RegistryError::Duplicate`] or [`RegistryError::BadName`]; the
    /// registry is unchanged.
    pub fn register<F>(
        &mut self,
        name: impl Into<String>,
        build: F,
    ) -> Result<&mut Self, RegistryError>
    where
        F: Fn(MethodContext<'_>) -> BuildResult + Send + Sync + 'static,
    {
        let name = name.into();
        if let Some(reason) = bad_name(&name) {
            return Err(RegistryError::BadName { name, reason });
        }
        if self.contains(&name) {
            return Err(RegistryError::Duplicate { name });
        }
        self.entries.push(Entry {
            name,
            build: Arc::new(build),
        });
        Ok(self)
    }

    /// Registers how `name`'s checkpoints expand into a request (see
    /// [`CheckpointExpansion`]); it is asked after the expansions already
    /// registered.
    ///
    /// # Errors
    /// [`RegistryError::Unregistered`] when no method is registered under
    /// `name`.
    pub fn register_expansion(
        &mut self,
        name: &str,
        expansion: Arc<dyn CheckpointExpansion>,
    ) -> Result<&mut Self, RegistryError> {
        if !self.contains(name) {
            return Err(RegistryError::Unregistered {
                name: name.to_string(),
            });
        }
        self.expansions.push(expansion);
        Ok(self)
    }

    /// Whether a method is registered under `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.iter().any(|e| e.name == name)
    }

    /// Every registered name: the built-ins in their table's order, then
    /// the host's in the order they were registered.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// The send-time expansions, in the order the request builder asks
    /// them.
    pub fn expansions(&self) -> &[Arc<dyn CheckpointExpansion>] {
        &self.expansions
    }

    /// The first name of `names` that is not registered, with the message
    /// that says so and lists the known ones.
    pub fn check_names<'a>(
        &self,
        names: impl IntoIterator<Item = &'a String>,
    ) -> Result<(), UnknownMethod> {
        for name in names {
            if !self.contains(name) {
                return Err(UnknownMethod {
                    name: name.clone(),
                    known: self.names().join(", "),
                });
            }
        }
        Ok(())
    }

    /// Builds `name`.
    ///
    /// # Errors
    /// Why it could not be built: not configured, not registered, or the
    /// builder made a method that reports another name.
    pub fn build_one(&self, name: &str, context: MethodContext<'_>) -> BuildResult {
        let entry = self
            .entries
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| format!("unknown method {name:?}"))?;
        let method = (entry.build)(context)?;
        // Passes find methods by the name they report: a builder that
        // answers under another name could never be run by its own.
        if method.name() != name {
            return Err(format!(
                "its builder made a method named {:?}",
                method.name()
            ));
        }
        Ok(method)
    }

    /// Builds `settings.method_order`: the methods that can be built, in
    /// order, and a failure of kind `not_configured` for each that cannot.
    pub fn build(&self, settings: &Settings, sources: &MethodSources) -> MethodSet {
        let context = MethodContext { settings, sources };
        let mut set = MethodSet::default();
        for name in &settings.method_order {
            match self.build_one(name, context) {
                Ok(method) => set.methods.push(method),
                Err(reason) => {
                    tracing::info!(method = %name, %reason, "method skipped");
                    set.skipped.push(MethodFailure::new(
                        name.clone(),
                        ErrorKind::NotConfigured,
                        format!("{name} skipped: {reason}"),
                    ));
                }
            }
        }
        set
    }
}

/// Builds `settings.method_order` with the built-in registry: the
/// methods that can be built, in order, and a failure of kind
/// `not_configured` for each that cannot. Pass both to
/// [`HarnessBuilder::method_set`](crate::HarnessBuilder::method_set) so
/// the skipped ones are reported; a host with its own methods registers them
/// in a [`MethodRegistry`](crate::MethodRegistry) instead.
pub fn build_methods(
    settings: &Settings,
    sources: &MethodSources,
) -> (Vec<Arc<dyn CompactionMethod>>, Vec<MethodFailure>) {
    let set = builtin().build(settings, sources);
    (set.methods, set.skipped)
}

/// A method name no method is registered under.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown method {name:?}; known: {known}")]
pub struct UnknownMethod {
    /// The name.
    pub name: String,
    /// The registered names, joined with `, `.
    pub known: String,
}

/// Why `name` cannot be registered, if it cannot.
fn bad_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Some("may hold only ASCII letters, digits, '-' and '_'")
    } else {
        None
    }
}

/// The methods of an order, built, and the ones that could not be, so a
/// pass reports them as skipped instead of forgetting them.
#[derive(Debug, Clone, Default)]
pub struct MethodSet {
    /// The methods, in order.
    pub methods: Vec<Arc<dyn CompactionMethod>>,
    /// One `not_configured` failure per method that could not be built.
    pub skipped: Vec<MethodFailure>,
}

impl From<Vec<Arc<dyn CompactionMethod>>> for MethodSet {
    fn from(methods: Vec<Arc<dyn CompactionMethod>>) -> Self {
        MethodSet {
            methods,
            skipped: Vec::new(),
        }
    }
}

impl From<(Vec<Arc<dyn CompactionMethod>>, Vec<MethodFailure>)> for MethodSet {
    fn from((methods, skipped): (Vec<Arc<dyn CompactionMethod>>, Vec<MethodFailure>)) -> Self {
        MethodSet { methods, skipped }
    }
}
