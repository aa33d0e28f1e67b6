//! Token accounting for abridge: tokenizers, message cost, image billing,
//! and the incremental surface meter.

mod bpe;
mod pretokenize;
mod tokenizer;

pub use tokenizer::ESTIMATE_BYTES_PER_TOKEN;
pub use tokenizer::Encoding;
pub use tokenizer::Estimate;
pub use tokenizer::Tiktoken;
pub use tokenizer::Tokenizer;
pub use tokenizer::tokenizer_for;
