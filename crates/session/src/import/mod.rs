//! Importers: other agents' session files turned into abridge logs.
