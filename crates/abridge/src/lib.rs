//! The abridge facade: settings, the harness builder and the maintenance state machine.
