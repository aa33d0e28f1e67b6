//! Which model a command prices and compacts for.

use abridge_llm::Catalog;
use abridge_llm::Lookup;
use abridge_llm::Origin;
use abridge_session::Session;

/// The catalog entry for `--model`, else for the model that wrote the
/// session's last assistant message, else the conservative default. Says
/// on stderr when figures are guessed.
pub(crate) fn resolve(session: &Session, requested: Option<&str>) -> (String, Lookup) {
    let id = requested
        .map(str::to_string)
        .or_else(|| last_model(session))
        .unwrap_or_else(|| "unknown".to_string());
    let lookup = Catalog::builtin().lookup(&id);
    if lookup.is_default() {
        // Asking for --model is advice only for a model the user did not
        // name; a named one is a name the catalog does not know.
        let advice = match requested {
            Some(_) => {
                "check the name, or give the window with --window where the command takes it"
            }
            None => "pass --model to choose",
        };
        eprintln!(
            "note: model {id:?} is not in the catalog; using conservative defaults ({} token window); {advice}",
            lookup.entry.context_window
        );
    }
    (id, lookup)
}

/// The catalog entry of `model` (the conservative default when it is
/// `None` or unknown), without a note: for work done on the user's
/// behalf, such as counting an imported session ahead of time.
pub(crate) fn named_or_default(model: Option<&str>) -> Lookup {
    Catalog::builtin().lookup(model.unwrap_or("unknown"))
}

/// The catalog entry of the model that wrote the session's last reply
/// (the conservative default when none is named), without a note: for
/// reading the session's own usage reports on the basis they were made.
pub(crate) fn recorded(session: &Session) -> Lookup {
    named_or_default(last_model(session).as_deref())
}

/// The model that wrote the session's last assistant message.
pub(crate) fn last_model(session: &Session) -> Option<String> {
    session
        .events()
        .iter()
        .rev()
        .find_map(|event| match &event.message()?.meta.origin {
            Some(Origin::Model { model, .. }) if !model.is_empty() => Some(model.clone()),
            _ => None,
        })
}
