//! Cutting long text into pages of a fixed number of characters, so one
//! recall call never floods the context. Pages are contiguous: joined in
//! order they give the text back exactly.

use super::miss::RecallMiss;

/// Characters a page holds per token of its cap: a rough, tokenizer-free
/// estimate (English and code average about four).
pub const CHARS_PER_TOKEN: usize = 4;

/// One page of a longer text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Page {
    /// The page's text.
    pub text: String,
    /// Which page, from 1.
    pub page: usize,
    /// How many pages the whole text has (at least 1).
    pub pages: usize,
}

/// Page `page` (from 1) of `text` cut every `page_chars` characters.
///
/// # Errors
/// [`RecallMiss::NoPage`] past the last page (or page 0); `what` names the
/// text in that message.
pub(super) fn page_of(
    text: &str,
    page: usize,
    page_chars: usize,
    what: &str,
) -> Result<Page, RecallMiss> {
    let page_chars = page_chars.max(1);
    let total = text.chars().count();
    let pages = total.div_ceil(page_chars).max(1);
    if page == 0 || page > pages {
        return Err(RecallMiss::NoPage {
            what: what.to_string(),
            page,
            pages,
        });
    }
    let start = byte_at(text, (page - 1) * page_chars);
    let end = byte_at(text, page * page_chars);
    Ok(Page {
        text: text[start..end].to_string(),
        page,
        pages,
    })
}

/// The byte offset of character `n` (the text's length past the end).
pub(super) fn byte_at(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(at, _)| at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_join_back_to_the_text() {
        let text = "héllo wörld, a longer line of text";
        let pages = page_of(text, 1, 5, "x").unwrap().pages;
        let joined: String = (1..=pages)
            .map(|p| page_of(text, p, 5, "x").unwrap().text)
            .collect();
        assert_eq!(joined, text);
        assert_eq!(page_of("", 1, 5, "x").unwrap().pages, 1);
        assert_eq!(
            page_of(text, pages + 1, 5, "recall://3")
                .unwrap_err()
                .to_string(),
            format!(
                "recall://3 has {pages} page(s); page {} does not exist",
                pages + 1
            )
        );
    }
}
