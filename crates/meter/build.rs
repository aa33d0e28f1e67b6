//! Writes the o200k and cl100k rank tables as compiled-in hash tables
//! (see src/rank_table.rs), read from tiktoken-rs's published tables once
//! at build time instead of at every process start. A build script that
//! cannot write its output should stop the build, so it panics.

#![allow(clippy::expect_used, clippy::panic)]

#[path = "src/rank_table.rs"]
#[allow(dead_code)]
mod rank_table;

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/rank_table.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for (name, core) in [
        ("o200k", tiktoken_rs::o200k_base()),
        ("cl100k", tiktoken_rs::cl100k_base()),
    ] {
        let core = core.unwrap_or_else(|e| panic!("tiktoken-rs {name} tables: {e}"));
        let special: Vec<Vec<u8>> = core
            .special_tokens()
            .into_iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        // Both vocabularies are below 2^18 ids; missing ids are gaps.
        let mut tokens: Vec<Option<Vec<u8>>> = (0..(1u32 << 18))
            .map(|rank| {
                core.decode_bytes(&[rank])
                    .ok()
                    .filter(|bytes| !special.contains(bytes))
            })
            .collect();
        while tokens.last().is_some_and(Option::is_none) {
            tokens.pop();
        }
        let table = write(&tokens);
        std::fs::write(out.join(format!("{name}.table")), table)
            .unwrap_or_else(|e| panic!("writing the {name} table: {e}"));
    }
}

/// Writes the table for `tokens`, where `tokens[rank]` is that rank's
/// bytes (`None` for an id that is not an ordinary token).
fn write(tokens: &[Option<Vec<u8>>]) -> Vec<u8> {
    let count = tokens.iter().flatten().count();
    let mut bits = 4u32;
    while (1usize << bits) * 2 < count * 5 {
        bits += 1;
    }
    let mut slots = vec![rank_table::EMPTY; 1 << bits];
    let mask = (1usize << bits) - 1;
    for (rank, bytes) in tokens.iter().enumerate() {
        let Some(bytes) = bytes else { continue };
        let mut slot = (rank_table::hash(bytes) >> (64 - bits)) as usize;
        while slots[slot] != rank_table::EMPTY {
            slot = (slot + 1) & mask;
        }
        slots[slot] = u32::try_from(rank).expect("ranks fit in u32");
    }
    let mut out = Vec::new();
    out.extend_from_slice(rank_table::MAGIC);
    for value in [bits, len_u32(tokens.len()), len_u32(count)] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    for slot in slots {
        out.extend_from_slice(&slot.to_le_bytes());
    }
    let mut offset = 0usize;
    for bytes in tokens {
        out.extend_from_slice(&len_u32(offset).to_le_bytes());
        offset += bytes.as_ref().map_or(0, Vec::len);
    }
    out.extend_from_slice(&len_u32(offset).to_le_bytes());
    for bytes in tokens.iter().flatten() {
        out.extend_from_slice(bytes);
    }
    out
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).expect("table sizes fit in u32")
}
