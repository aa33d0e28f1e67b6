//! Tokenizers: the exact OpenAI BPEs and a fast estimate.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::OnceLock;

use abridge_llm::TokenizerFamily;

use crate::bpe::Bpe;
use crate::pretokenize::Pattern;
use crate::rank_table::RankTable;

/// Counts the tokens of a text.
///
/// # Contract
///
/// - `count` is a pure function of the text: the same text always gives
///   the same number, whatever was counted before, so counts can be cached
///   by message forever.
/// - `count` of a concatenation may differ from the sum of the counts of
///   its parts by a few tokens at the seams; callers that sum (the meter
///   does, per block) accept that.
/// - `fits_within(text, budget)` answers `count(text) <= budget`. It must
///   never say a text fits when it does not.
///
/// Only [`count`](Self::count) is required. Implementations are shared
/// across threads (`Send + Sync`) and behind `Arc<dyn Tokenizer>`.
pub trait Tokenizer: Send + Sync + Debug {
    /// A short name for reports, for example `o200k`.
    fn name(&self) -> &str {
        "custom"
    }

    /// The number of tokens in `text`.
    fn count(&self, text: &str) -> usize;

    /// Whether `text` costs at most `budget` tokens.
    ///
    /// The default answers from the byte length when the bytes already
    /// fit, without tokenizing: a byte-level BPE starts from one token per
    /// byte and every merge joins two tokens into one, so a text never has
    /// more tokens than bytes (`count(text) <= text.len()`). The estimate
    /// (bytes / 4, rounded up) is below the byte length too. A tokenizer for
    /// which this does not hold must override this method.
    fn fits_within(&self, text: &str, budget: usize) -> bool {
        text.len() <= budget || self.count(text) <= budget
    }
}

impl<T: Tokenizer + ?Sized> Tokenizer for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn count(&self, text: &str) -> usize {
        (**self).count(text)
    }
    fn fits_within(&self, text: &str, budget: usize) -> bool {
        (**self).fits_within(text, budget)
    }
}

impl<T: Tokenizer + ?Sized> Tokenizer for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn count(&self, text: &str) -> usize {
        (**self).count(text)
    }
    fn fits_within(&self, text: &str, budget: usize) -> bool {
        (**self).fits_within(text, budget)
    }
}

impl<T: Tokenizer + ?Sized> Tokenizer for &T {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn count(&self, text: &str) -> usize {
        (**self).count(text)
    }
    fn fits_within(&self, text: &str, budget: usize) -> bool {
        (**self).fits_within(text, budget)
    }
}

/// The fast estimate: one token per four bytes, rounded up.
///
/// Cheap and never tokenizes, but wrong in both directions: English prose
/// runs about 4.5 bytes per token, while CJK text (3 bytes per character,
/// often one token each) is undercounted about threefold. Use it where
/// speed matters more than the figure; the meter defaults to an exact BPE.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Estimate;

/// Bytes per token assumed by [`Estimate`].
pub const ESTIMATE_BYTES_PER_TOKEN: usize = 4;

/// The estimate's tokens for `bytes` bytes of text: bytes / 4, rounded up.
///
/// The workspace's one bytes/4 rule. [`Estimate`] counts text with it and
/// `EstimateCounter` counts messages with it; anything else that guesses
/// tokens from a byte length without a tokenizer calls it too, so the
/// guesses agree and the ratio lives in one place.
pub fn estimate_tokens(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(ESTIMATE_BYTES_PER_TOKEN)).unwrap_or(u64::MAX)
}

impl Tokenizer for Estimate {
    fn name(&self) -> &str {
        "bytes/4"
    }
    fn count(&self, text: &str) -> usize {
        usize::try_from(estimate_tokens(text.len())).unwrap_or(usize::MAX)
    }
}

/// The two public OpenAI encodings the meter runs exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// o200k_base: GPT-4o, GPT-4.1, GPT-5.x, o-series, gpt-oss.
    O200k,
    /// cl100k_base: GPT-4, GPT-3.5.
    Cl100k,
}

impl Encoding {
    /// The encoding's tables: compiled in, read in place on first use
    /// (microseconds; nothing is parsed or hashed at run time).
    pub(crate) fn bpe(self) -> &'static Bpe {
        static O200K: OnceLock<Bpe> = OnceLock::new();
        static CL100K: OnceLock<Bpe> = OnceLock::new();
        match self {
            Encoding::O200k => O200K.get_or_init(|| build(Encoding::O200k)),
            Encoding::Cl100k => CL100K.get_or_init(|| build(Encoding::Cl100k)),
        }
    }

    /// tiktoken's name for the encoding.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200k => "o200k_base",
            Encoding::Cl100k => "cl100k_base",
        }
    }
}

/// The rank tables `build.rs` wrote from tiktoken-rs's published files.
static O200K_TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k.table"));
static CL100K_TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k.table"));

fn build(encoding: Encoding) -> Bpe {
    let (table, pattern) = match encoding {
        Encoding::O200k => (O200K_TABLE, Pattern::O200k),
        Encoding::Cl100k => (CL100K_TABLE, Pattern::Cl100k),
    };
    match RankTable::new(table) {
        Some(ranks) => Bpe::new(ranks, pattern),
        // The build script wrote these bytes; this cannot fail for a
        // finished build. Should it, every count falls back to bytes,
        // which over-counts: compaction fires early, never late.
        None => {
            tracing::error!(
                encoding = encoding.name(),
                "the compiled-in tokenizer table is malformed"
            );
            Bpe::empty(pattern)
        }
    }
}

/// An exact OpenAI tokenizer (o200k or cl100k), counting as tiktoken's
/// `encode_ordinary` does: special-token strings in the text are ordinary
/// text.
///
/// Cheap to create and copy: the tables are shared per process and built
/// on the first count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiktoken {
    encoding: Encoding,
}

impl Tiktoken {
    /// o200k_base.
    pub fn o200k() -> Self {
        Tiktoken {
            encoding: Encoding::O200k,
        }
    }

    /// cl100k_base.
    pub fn cl100k() -> Self {
        Tiktoken {
            encoding: Encoding::Cl100k,
        }
    }

    /// Which encoding this is.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Touches the tables now rather than on the first count. They are
    /// compiled in, so this costs microseconds; kept for callers that
    /// warmed up when it cost a parse.
    pub fn warm_up(&self) {
        let _ = self.encoding.bpe();
    }
}

impl Tokenizer for Tiktoken {
    fn name(&self) -> &str {
        match self.encoding {
            Encoding::O200k => "o200k",
            Encoding::Cl100k => "cl100k",
        }
    }
    fn count(&self, text: &str) -> usize {
        self.encoding.bpe().count(text)
    }
}

/// The closest tokenizer the meter has for a model's tokenizer family.
///
/// o200k and cl100k are exact. The other families' vocabularies are not
/// public in a form we ship (Claude) or differ per model line (Gemini,
/// DeepSeek, Qwen, Kimi, GLM, Llama); they are counted with o200k, a
/// modern 200k-vocabulary BPE of the same kind. The error this leaves is
/// what anchoring to the provider's reported usage corrects (see
/// [`Measure`](crate::Measure)).
pub fn tokenizer_for(family: TokenizerFamily) -> Arc<dyn Tokenizer> {
    match family {
        TokenizerFamily::Cl100k => Arc::new(Tiktoken::cl100k()),
        _ => Arc::new(Tiktoken::o200k()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Implements only the required methods, so the defaults are tested.
    #[derive(Debug)]
    struct Counting(std::sync::atomic::AtomicUsize);

    impl Tokenizer for Counting {
        fn count(&self, text: &str) -> usize {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            text.split_whitespace().count()
        }
    }

    #[test]
    fn fits_within_answers_from_bytes_without_tokenizing() {
        let t = Counting(std::sync::atomic::AtomicUsize::new(0));
        assert!(t.fits_within("a b c", 5));
        assert_eq!(t.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert!(t.fits_within("a b c", 3));
        assert!(!t.fits_within("a b c", 2));
        assert_eq!(t.0.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(t.name(), "custom");
        let boxed: Box<dyn Tokenizer> = Box::new(Estimate);
        assert_eq!(boxed.count("abcdefgh"), 2);
    }

    #[test]
    fn estimate_rounds_up() {
        assert_eq!(Estimate.count(""), 0);
        assert_eq!(Estimate.count("abc"), 1);
        assert_eq!(Estimate.count("abcd"), 1);
        assert_eq!(Estimate.count("abcde"), 2);
        assert_eq!(Estimate.count("中文"), 2);
    }

    #[test]
    fn exact_counts_never_exceed_bytes() {
        for text in [
            "hello world",
            "中文字符",
            "    \n\n\t",
            "😀😀😀",
            "{\"a\":[1,2,3]}",
        ] {
            for t in [Tiktoken::o200k(), Tiktoken::cl100k()] {
                assert!(t.count(text) <= text.len(), "{text}");
            }
        }
    }

    #[test]
    fn families_map_to_the_closest_exact_tokenizer() {
        assert_eq!(tokenizer_for(TokenizerFamily::Cl100k).name(), "cl100k");
        assert_eq!(tokenizer_for(TokenizerFamily::O200k).name(), "o200k");
        assert_eq!(tokenizer_for(TokenizerFamily::Claude).name(), "o200k");
        assert_eq!(tokenizer_for(TokenizerFamily::Unknown).name(), "o200k");
    }
}
