//! Byte-pair encoding over tiktoken's rank tables, for counting.
//!
//! The rank tables come from tiktoken-rs (which ships OpenAI's files); we
//! read them back out of its `CoreBPE` once per process and keep them in a
//! map keyed by byte string. Encoding a piece follows tiktoken exactly:
//! a piece that is itself a token is one token; otherwise adjacent parts
//! are merged lowest rank first, leftmost on ties, until no adjacent pair
//! forms a token.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::pretokenize::Pattern;
use crate::pretokenize::for_each_piece;
use crate::rank_table::RankTable;

/// Rank of a token (its id).
pub(crate) type Rank = u32;

/// One encoding: its ranks and split pattern.
pub(crate) struct Bpe {
    ranks: RankTable,
    pattern: Pattern,
}

impl std::fmt::Debug for Bpe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bpe")
            .field("pattern", &self.pattern)
            .field("tokens", &self.ranks.len())
            .finish()
    }
}

/// Pieces at least this long merge with a heap (O(n log n)) instead of the
/// quadratic scan, which is faster only for short pieces.
const LARGE_PIECE: usize = 128;

impl Bpe {
    /// An encoding over a compiled-in rank table.
    pub(crate) fn new(ranks: RankTable, pattern: Pattern) -> Self {
        Bpe { ranks, pattern }
    }

    /// No tokens at all: every byte counts as one token. Used only if the
    /// tables fail to load, so counts err high.
    pub(crate) fn empty(pattern: Pattern) -> Self {
        Bpe {
            ranks: RankTable::empty(),
            pattern,
        }
    }

    /// Number of ordinary tokens.
    #[cfg(test)]
    pub(crate) fn vocabulary_len(&self) -> usize {
        self.ranks.len()
    }

    #[inline]
    fn rank(&self, bytes: &[u8]) -> Option<Rank> {
        self.ranks.rank(bytes)
    }

    /// Tokens in `text`, special-token strings counted as ordinary text
    /// (tiktoken's `encode_ordinary`).
    pub(crate) fn count(&self, text: &str) -> usize {
        let mut n = 0;
        for_each_piece(self.pattern, text, |piece| {
            n += if self.ranks.rank(piece).is_some() {
                1
            } else {
                self.merge(piece, |_| {})
            };
        });
        n
    }

    /// The token ids of `text`, for comparison with tiktoken.
    #[cfg(test)]
    pub(crate) fn encode(&self, text: &str) -> Vec<Rank> {
        let mut out = Vec::new();
        for_each_piece(self.pattern, text, |piece| match self.rank(piece) {
            Some(rank) => out.push(rank),
            None => {
                let mut bounds = Vec::new();
                self.merge(piece, |b| bounds.push(b));
                for w in bounds.windows(2) {
                    out.push(self.rank(&piece[w[0]..w[1]]).unwrap_or(Rank::MAX));
                }
            }
        });
        out
    }

    /// Merges `piece` and returns the number of tokens; `bounds` receives
    /// every token boundary (start of each token, then the end).
    fn merge(&self, piece: &[u8], bounds: impl FnMut(usize)) -> usize {
        if piece.len() < LARGE_PIECE {
            self.merge_small(piece, bounds)
        } else {
            self.merge_large(piece, bounds)
        }
    }

    /// The quadratic merge: keep part boundaries and the rank of each
    /// adjacent pair; merge the lowest, leftmost first.
    fn merge_small(&self, piece: &[u8], mut bounds: impl FnMut(usize)) -> usize {
        // (start of part, rank of this part merged with the next)
        let mut parts: Vec<(usize, Rank)> = Vec::with_capacity(piece.len() + 1);
        for i in 0..piece.len() {
            let rank = if i + 2 <= piece.len() {
                self.rank(&piece[i..i + 2]).unwrap_or(Rank::MAX)
            } else {
                Rank::MAX
            };
            parts.push((i, rank));
        }
        parts.push((piece.len(), Rank::MAX));
        let pair_rank = |parts: &[(usize, Rank)], i: usize| -> Rank {
            if i + 3 < parts.len() {
                self.rank(&piece[parts[i].0..parts[i + 3].0])
                    .unwrap_or(Rank::MAX)
            } else {
                Rank::MAX
            }
        };
        loop {
            let mut min = (Rank::MAX, 0);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < min.0 {
                    min = (rank, i);
                }
            }
            if min.0 == Rank::MAX {
                break;
            }
            let i = min.1;
            // Parts i and i+1 become one: its pair rank is with part i+2.
            parts[i].1 = pair_rank(&parts, i);
            if i > 0 {
                parts[i - 1].1 = pair_rank(&parts, i - 1);
            }
            parts.remove(i + 1);
        }
        for &(start, _) in &parts {
            bounds(start);
        }
        parts.len() - 1
    }

    /// The same merge with a heap and a linked list, for long pieces (runs
    /// of whitespace, base64, minified data) where the scan is quadratic.
    fn merge_large(&self, piece: &[u8], mut bounds: impl FnMut(usize)) -> usize {
        let n = piece.len();
        // Parts are identified by their start byte; `next[i]` is the start
        // of the following part (n at the end), `prev[i]` the previous.
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap: BinaryHeap<Reverse<(Rank, usize, usize)>> = BinaryHeap::new();
        let push_pair = |heap: &mut BinaryHeap<_>, next: &[usize], i: usize| {
            let j = next[i];
            if j < n {
                let end = next[j];
                if let Some(rank) = self.rank(&piece[i..end]) {
                    heap.push(Reverse((rank, i, end)));
                }
            }
        };
        for i in 0..n {
            push_pair(&mut heap, &next, i);
        }
        let mut count = n;
        while let Some(Reverse((_, i, end))) = heap.pop() {
            // Skip entries whose parts have changed since they were pushed.
            if !alive[i] || next[i] >= n || next[next[i]] != end {
                continue;
            }
            let j = next[i];
            alive[j] = false;
            next[i] = next[j];
            if next[j] < n {
                prev[next[j]] = i;
            }
            count -= 1;
            push_pair(&mut heap, &next, i);
            if i > 0 {
                push_pair(&mut heap, &next, prev[i]);
            }
        }
        let mut i = 0;
        while i < n {
            bounds(i);
            i = next[i];
        }
        bounds(n);
        count
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::pretokenize::tests::arb_text;
    use crate::tokenizer::Encoding;

    fn reference(encoding: Encoding) -> &'static tiktoken_rs::CoreBPE {
        match encoding {
            Encoding::O200k => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100k => tiktoken_rs::cl100k_base_singleton(),
        }
    }

    #[test]
    fn vocabularies_have_the_published_sizes() {
        // o200k_base: 199,998 ordinary tokens; cl100k_base: 100,256.
        assert_eq!(Encoding::O200k.bpe().vocabulary_len(), 199_998);
        assert_eq!(Encoding::Cl100k.bpe().vocabulary_len(), 100_256);
    }

    #[test]
    fn large_and_small_merges_agree() {
        let bpe = Encoding::O200k.bpe();
        for piece in [
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".as_bytes(),
            "Supercalifragilisticexpialidocious".as_bytes(),
            "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123456789+/=".as_bytes(),
            "中文字符和日本語の文字が混ざっている".as_bytes(),
        ] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let na = bpe.merge_small(piece, |x| a.push(x));
            let nb = bpe.merge_large(piece, |x| b.push(x));
            assert_eq!((na, &a), (nb, &b));
        }
    }

    #[test]
    fn long_pieces_match_tiktoken() {
        for encoding in [Encoding::O200k, Encoding::Cl100k] {
            for text in [
                " ".repeat(5000),
                "\n".repeat(3000),
                "=".repeat(4000),
                "x".repeat(2000),
                "ab".repeat(1500),
                "\u{1F600}".repeat(300),
            ] {
                assert_eq!(
                    encoding.bpe().encode(&text),
                    reference(encoding).encode_ordinary(&text),
                    "{encoding:?} {:?}",
                    &text[..8]
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn same_tokens_as_tiktoken_rs(text in arb_text()) {
            for encoding in [Encoding::O200k, Encoding::Cl100k] {
                prop_assert_eq!(
                    encoding.bpe().encode(&text),
                    reference(encoding).encode_ordinary(&text),
                    "{:?} {:?}", encoding, text
                );
            }
        }
    }
}
