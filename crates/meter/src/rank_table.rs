//! The BPE rank tables as a read-only hash table in bytes, built by
//! `build.rs` from tiktoken-rs's published tables and compiled into the
//! binary, so a process counts its first token without parsing or hashing
//! 200,000 entries (that took about 150 ms per process start).
//!
//! This file is also compiled into the build script (`#[path]`), so the
//! writer there and the reader here share one layout and one hash.
//!
//! Layout, all integers little-endian `u32`:
//!
//! | part | size |
//! |---|---|
//! | magic `ABRBPE01` | 8 bytes |
//! | slot bits `b`, rank count `r`, token count | 3 × 4 bytes |
//! | slots: the rank stored there, or `EMPTY` | 2^b × 4 bytes |
//! | offsets: where each rank's bytes start; rank `i` is `offsets[i]..offsets[i + 1]` | (r + 1) × 4 bytes |
//! | the tokens' bytes, by rank | the rest |
//!
//! Lookup hashes the bytes (FxHash), starts at the slot named by the top
//! `b` bits and probes linearly until the bytes match or a slot is empty.
//! The table is at most 40% full, so probes are short.

/// The table's first bytes.
pub(crate) const MAGIC: &[u8; 8] = b"ABRBPE01";
/// A slot holding no rank.
pub(crate) const EMPTY: u32 = u32::MAX;
/// Bytes before the slots: the magic and three `u32`s.
pub(crate) const HEADER: usize = 8 + 12;

/// FxHash over a byte string (the rustc hasher): fast for short keys; the
/// key set is fixed, so flooding is not a concern.
#[inline]
pub(crate) fn hash(mut bytes: &[u8]) -> u64 {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let len = bytes.len() as u64;
    let mut h: u64 = 0;
    let mut add = |word: u64| h = (h.rotate_left(5) ^ word).wrapping_mul(SEED);
    while bytes.len() >= 8 {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[..8]);
        add(u64::from_le_bytes(word));
        bytes = &bytes[8..];
    }
    if bytes.len() >= 4 {
        let mut word = [0u8; 4];
        word.copy_from_slice(&bytes[..4]);
        add(u64::from(u32::from_le_bytes(word)));
        bytes = &bytes[4..];
    }
    for &b in bytes {
        add(u64::from(b));
    }
    // The length ends the key, so "a" and "a\0" differ.
    add(len ^ 0xff);
    h
}

/// A table over bytes that live as long as the process (compiled in).
#[derive(Clone, Copy)]
pub(crate) struct RankTable {
    bits: u32,
    ranks: usize,
    count: usize,
    slots: &'static [u8],
    offsets: &'static [u8],
    bytes: &'static [u8],
}

impl RankTable {
    /// Reads the header of `table`; `None` when it is not a table this
    /// code wrote (a wrong magic or a truncated file).
    pub(crate) fn new(table: &'static [u8]) -> Option<Self> {
        if table.len() < HEADER || &table[..8] != MAGIC {
            return None;
        }
        let field = |i: usize| read_u32(table, 8 + 4 * i) as usize;
        let (bits, ranks, count) = (field(0) as u32, field(1), field(2));
        if bits == 0 || bits >= 32 {
            return None;
        }
        let slots_end = HEADER + (4usize << bits);
        let offsets_end = slots_end + 4 * (ranks + 1);
        if table.len() < offsets_end {
            return None;
        }
        let bytes = &table[offsets_end..];
        if read_u32(table, offsets_end - 4) as usize != bytes.len() {
            return None;
        }
        Some(RankTable {
            bits,
            ranks,
            count,
            slots: &table[HEADER..slots_end],
            offsets: &table[slots_end..offsets_end],
            bytes,
        })
    }

    /// An empty table: nothing is a token.
    pub(crate) fn empty() -> Self {
        RankTable {
            bits: 0,
            ranks: 0,
            count: 0,
            slots: &[],
            offsets: &[],
            bytes: &[],
        }
    }

    /// Number of ordinary tokens.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The bytes of `rank` (empty for an id that is not a token).
    #[inline]
    pub(crate) fn token(&self, rank: u32) -> &'static [u8] {
        let rank = rank as usize;
        if rank >= self.ranks {
            return &[];
        }
        let start = read_u32(self.offsets, 4 * rank) as usize;
        let end = read_u32(self.offsets, 4 * rank + 4) as usize;
        &self.bytes[start..end]
    }

    /// The rank of `bytes`, when they are a token.
    #[inline]
    pub(crate) fn rank(&self, bytes: &[u8]) -> Option<u32> {
        if self.bits == 0 {
            return None;
        }
        let mask = (1usize << self.bits) - 1;
        let mut slot = (hash(bytes) >> (64 - self.bits)) as usize;
        loop {
            let rank = read_u32(self.slots, 4 * slot);
            if rank == EMPTY {
                return None;
            }
            if self.token(rank) == bytes {
                return Some(rank);
            }
            slot = (slot + 1) & mask;
        }
    }
}

#[inline]
fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}
