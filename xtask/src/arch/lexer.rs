//! A small Rust tokenizer for `lint-arch`: just enough to find module
//! declarations, attributes and paths without being fooled by comments,
//! string literals or char literals that happen to contain `crate::` or
//! braces.
//!
//! It does not aim to accept only valid Rust: anything it does not know is
//! a one-character punctuation token.

/// One token and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// What the token is.
    pub(crate) kind: Kind,
    /// The line it starts on, from 1.
    pub(crate) line: usize,
}

/// The kinds of token the scanner tells apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An identifier or keyword (`r#` stripped from raw identifiers).
    Ident(String),
    /// A string literal's contents (escapes left as written); byte and raw
    /// strings too.
    Str(String),
    /// `::`.
    PathSep,
    /// Any other single character: `{`, `}`, `;`, `#`, `!`, `[`, ...
    Punct(char),
    /// A number, char literal or lifetime: nothing the scanner looks at.
    Other,
}

impl Token {
    /// Whether this token is the identifier `word`.
    pub(crate) fn is_ident(&self, word: &str) -> bool {
        matches!(&self.kind, Kind::Ident(name) if name == word)
    }

    /// Whether this token is the punctuation `c`.
    pub(crate) fn is_punct(&self, c: char) -> bool {
        self.kind == Kind::Punct(c)
    }

    /// The identifier's name, if it is one.
    pub(crate) fn ident(&self) -> Option<&str> {
        match &self.kind {
            Kind::Ident(name) => Some(name),
            _ => None,
        }
    }
}

/// Splits `source` into tokens, dropping comments (doc comments too: an
/// intra-doc link is not an import) and whitespace.
pub(crate) fn tokenize(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < chars.len() {
        let c = chars[i];
        let start_line = line;
        let push = |tokens: &mut Vec<Token>, kind| {
            tokens.push(Token {
                kind,
                line: start_line,
            })
        };
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i = skip_block_comment(&chars, i, &mut line);
        } else if let Some((hashes, open)) = raw_string_start(&chars, i) {
            let (text, end) = raw_string(&chars, open, hashes, &mut line);
            push(&mut tokens, Kind::Str(text));
            i = end;
        } else if c == '"' || (c == 'b' && chars.get(i + 1) == Some(&'"')) {
            let open = if c == 'b' { i + 1 } else { i };
            let (text, end) = quoted(&chars, open, &mut line);
            push(&mut tokens, Kind::Str(text));
            i = end;
        } else if c == '\'' {
            i = char_or_lifetime(&chars, i);
            push(&mut tokens, Kind::Other);
        } else if c == 'r' && chars.get(i + 1) == Some(&'#') && is_ident_start(chars.get(i + 2)) {
            let (word, end) = ident(&chars, i + 2);
            push(&mut tokens, Kind::Ident(word));
            i = end;
        } else if is_ident_start(Some(&c)) {
            let (word, end) = ident(&chars, i);
            push(&mut tokens, Kind::Ident(word));
            i = end;
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            push(&mut tokens, Kind::Other);
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            push(&mut tokens, Kind::PathSep);
            i += 2;
        } else {
            push(&mut tokens, Kind::Punct(c));
            i += 1;
        }
    }
    tokens
}

fn is_ident_start(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphabetic() || *c == '_')
}

fn ident(chars: &[char], start: usize) -> (String, usize) {
    let mut end = start;
    while end < chars.len() && (chars[end].is_alphanumeric() || chars[end] == '_') {
        end += 1;
    }
    (chars[start..end].iter().collect(), end)
}

/// Block comments nest in Rust.
fn skip_block_comment(chars: &[char], start: usize, line: &mut usize) -> usize {
    let mut depth = 0;
    let mut i = start;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            if chars[i] == '\n' {
                *line += 1;
            }
            i += 1;
        }
    }
    i
}

/// `r"`, `r#"`, `br##"`...: the number of hashes and the index of the
/// opening quote.
fn raw_string_start(chars: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    // `r` must start the token: not the tail of an identifier like `for`.
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (chars.get(j) == Some(&'"')).then_some((hashes, j))
}

fn raw_string(chars: &[char], open: usize, hashes: usize, line: &mut usize) -> (String, usize) {
    let mut i = open + 1;
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return (chars[open + 1..i].iter().collect(), i + 1 + hashes);
        }
        if chars[i] == '\n' {
            *line += 1;
        }
        i += 1;
    }
    (chars[open + 1..].iter().collect(), i)
}

fn quoted(chars: &[char], open: usize, line: &mut usize) -> (String, usize) {
    let mut i = open + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                if chars.get(i + 1) == Some(&'\n') {
                    *line += 1;
                }
                i += 2;
            }
            '"' => return (chars[open + 1..i].iter().collect(), i + 1),
            c => {
                if c == '\n' {
                    *line += 1;
                }
                i += 1;
            }
        }
    }
    (chars[open + 1..].iter().collect(), i)
}

/// `'a'`, `'\n'`, `'\u{1F600}'` are char literals; `'a` is a lifetime.
/// Returns the index just past either.
fn char_or_lifetime(chars: &[char], start: usize) -> usize {
    if chars.get(start + 1) == Some(&'\\') {
        let mut i = start + 2;
        while i < chars.len() && chars[i] != '\'' && chars[i] != '\n' {
            i += 1;
        }
        return i + 1;
    }
    if chars.get(start + 2) == Some(&'\'') {
        return start + 3;
    }
    let mut i = start + 1;
    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::Kind;
    use super::tokenize;

    fn idents(source: &str) -> Vec<String> {
        tokenize(source)
            .into_iter()
            .filter_map(|t| t.ident().map(str::to_string))
            .collect()
    }

    #[test]
    fn comments_and_strings_hide_paths() {
        let source = "// use crate::a;\n/* crate::b /* nested */ crate::c */\nlet s = \"crate::d\";\nlet r = r#\"crate::\"e\"#;\nuse crate::f;";
        assert_eq!(
            idents(source),
            ["let", "s", "let", "r", "use", "crate", "f"]
        );
    }

    #[test]
    fn lines_are_counted_through_multiline_tokens() {
        let tokens = tokenize("/* one\ntwo */\n\"three\nfour\"\nfive");
        assert_eq!(tokens.last().map(|t| t.line), Some(5));
        assert_eq!(tokens[0].kind, Kind::Str("three\nfour".to_string()));
    }

    #[test]
    fn char_literals_and_lifetimes_do_not_swallow_code() {
        let source = "fn f<'a>(x: &'a str) { let c = '{'; let d = '\\''; crate::g(); }";
        let tokens = tokenize(source);
        let braces = tokens.iter().filter(|t| t.is_punct('{')).count();
        assert_eq!(braces, 1);
        assert!(idents(source).ends_with(&["crate".to_string(), "g".to_string()]));
    }

    #[test]
    fn for_loops_are_not_raw_strings() {
        assert_eq!(idents("for r in x {}"), ["for", "r", "in", "x"]);
    }
}
