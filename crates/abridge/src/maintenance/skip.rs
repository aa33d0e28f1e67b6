//! Which methods a trigger passes over, asked of each method's declared
//! capabilities (the "skipped methods" column of the trigger table in
//! docs/composition.md), never of its name.

use abridge_compact::CompactionMethod;
use abridge_compact::ErrorKind;
use abridge_compact::Trigger;
use abridge_compact::host::MethodFailure;

/// The failure that records `method` skipped by a pass for `trigger`, or
/// `None` when the method may run. On overflow a method that does not
/// run there (it resends the input that overflowed, like `handoff`) is
/// skipped; every other trigger runs every method.
pub(super) fn skipped_on(trigger: Trigger, method: &dyn CompactionMethod) -> Option<MethodFailure> {
    let capabilities = method.capabilities();
    if trigger != Trigger::Overflow || capabilities.runs_on_overflow() {
        return None;
    }
    let why = if capabilities.resends_input() {
        "it would resend the input that overflowed"
    } else {
        "it does not run on overflow"
    };
    let name = method.name();
    Some(MethodFailure {
        method: name.to_string(),
        kind: ErrorKind::Skipped,
        message: format!("{name} is skipped on overflow: {why}"),
    })
}
