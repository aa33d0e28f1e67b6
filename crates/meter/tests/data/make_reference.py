#!/usr/bin/env python3
"""Writes reference token counts for abridge-meter's exact tokenizers.

Run from this directory:

    TIKTOKEN_CACHE_DIR=/path/to/cache python3 make_reference.py

Python tiktoken downloads its tables on first use. Offline, point
TIKTOKEN_CACHE_DIR at a folder holding the .tiktoken files that the Rust
tiktoken-rs crate ships (under ~/.cargo/registry/src/*/tiktoken-rs-*/assets/),
each named by the SHA-1 hex of its public URL, for example
sha1("https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken").
tiktoken checks each file's SHA-256 against the published one, so a wrong file
is refused rather than silently used.

The output, reference_counts.json, is read by tests/reference.rs.
"""

import json
import tiktoken

CASES = {
    "empty": "",
    "ascii_sentence": "The quick brown fox jumps over the lazy dog.",
    "ascii_contractions": "It's what they'd've said, isn't it? We'LL see; you're RIGHT.",
    "ascii_numbers": "In 2025 we shipped 1234567 units at $19.99 (about 3.14159%).",
    "code_rust": "fn main() {\n    let xs: Vec<u32> = (0..10).map(|x| x * 2).collect();\n    println!(\"{:?}\", xs);\n}\n",
    "code_python": "def f(a, b=None):\n\tif b is None:\n\t\treturn a ** 2  # square\n\treturn a // b\n",
    "json": json.dumps({"tool": "read_file", "arguments": {"path": "/src/lib.rs", "offset": 120, "limit": 40}, "ok": True, "tags": ["a", "b"]}),
    "json_pretty": json.dumps({"id": "call_01", "items": [{"k": 1}, {"k": 2.5}], "nested": {"deep": [None, False]}}, indent=2),
    "cjk_chinese": "模型的上下文窗口是有限的，所以我们需要压缩历史记录。",
    "cjk_japanese": "コンテキストウィンドウがいっぱいになったら、履歴を要約します。",
    "cjk_korean": "컨텍스트 창이 가득 차면 기록을 요약합니다.",
    "mixed_scripts": "Ελληνικά, русский, العربية, हिन्दी और English together.",
    "emoji": "Done ✅ 🚀🚀 👩‍💻 family: 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 and skin 👍🏽!",
    "combining_marks": "e\u0301 n\u0303 a\u0308 Zalgo: Z\u0351\u0364a\u0300l\u0301g\u0302o\u0303",
    "long_whitespace_spaces": " " * 1000,
    "long_whitespace_mixed": "a" + " \t" * 200 + "\n" * 50 + "  \r\n" * 30 + "b",
    "trailing_whitespace": "line one   \nline two\t\t\n\n\n   ",
    "long_repeat": "ab" * 2000,
    "base64_blob": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==" * 20,
    "special_token_text": "before <|endoftext|> after <|fim_prefix|>",
    "path_and_url": "See https://example.com/a/b?c=d&e=f#g and /usr/local/bin/../lib//x.so",
    "unicode_spaces": "a\u00a0b\u2003c\u3000d\u2028e\u0085f",
}

ENCODINGS = ["o200k_base", "cl100k_base"]


def main():
    out = {"tiktoken_version": tiktoken.__version__, "cases": []}
    encoders = {name: tiktoken.get_encoding(name) for name in ENCODINGS}
    for name, text in CASES.items():
        counts = {enc: len(encoders[enc].encode_ordinary(text)) for enc in ENCODINGS}
        out["cases"].append({"name": name, "text": text, "counts": counts})
    with open("reference_counts.json", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
