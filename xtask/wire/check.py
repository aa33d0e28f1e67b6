"""Checks request bodies against the providers' own request types.

`cargo xtask wire` writes every body our encoders produce for a corpus of
histories into a folder, one JSON file each:

    {"endpoint": "...", "streaming": bool, "headers": {...}, "body": {...}}

and runs this script over it with the `openai` and `anthropic` packages
pinned in requirements.txt. Each body is walked against the package's
TypedDict for its endpoint: a key the type does not name, a required key
that is missing, a value of the wrong kind or outside a Literal fails the
check, with the path of the offending value. The beta header a body needs
is checked against the body's contents.

Where a published type is stricter than the server, or looser, the
difference is recorded in EXCEPTIONS below with its source, and nowhere
else. Nothing here fills in a value for a body: an exception relaxes the
check, never the body.
"""

import collections.abc
import json
import sys
import types
import typing
from pathlib import Path

import typing_extensions

# What each endpoint's body is checked against: (module, streaming type,
# whole-answer type).
ENDPOINTS = {
    "anthropic-messages": (
        "anthropic.types.beta.message_create_params",
        "MessageCreateParamsStreaming",
        "MessageCreateParamsNonStreaming",
    ),
    "anthropic-count-tokens": (
        "anthropic.types.beta.message_count_tokens_params",
        "MessageCountTokensParams",
        "MessageCountTokensParams",
    ),
    "openai-responses": (
        "openai.types.responses.response_create_params",
        "ResponseCreateParamsStreaming",
        "ResponseCreateParamsNonStreaming",
    ),
    "openai-responses-compact": (
        "openai.types.responses.response_compact_params",
        "ResponseCompactParams",
        "ResponseCompactParams",
    ),
    "openai-chat": (
        "openai.types.chat.completion_create_params",
        "CompletionCreateParamsStreaming",
        "CompletionCreateParamsNonStreaming",
    ),
}

# Keys a published type requires that the server does not: the TypedDict's
# name, the keys, and the source. A dict of that type may lack them.
EXCEPTIONS_MISSING_OK = {
    # An assistant message sent back as input. openai-python's
    # ResponseOutputMessageParam (from the OpenAPI document) requires the
    # item's `id` and `status`; codex-rs sends assistant messages without
    # either and the server accepts them. Inventing an id would be worse:
    # under `store: false` an unknown item id fails the request (404).
    "ResponseOutputMessageParam": (
        {"id", "status"},
        "codex-rs protocol/src/models.rs: ResponseItem::Message skips its id when serialized and has no status",
    ),
}

# Keys a published type allows that the server rejects: the block's type,
# the keys, and the source.
EXCEPTIONS_FORBIDDEN = {
    # anthropic-sdk-python's BetaCompactionBlockParam lists
    # `encrypted_content`; the Messages API answers 400 "Extra inputs are
    # not permitted" when a compaction block carries it.
    "compaction": (
        {"encrypted_content"},
        "anthropic-sdk-python issue 1828 (messages.N.content.0.compaction.encrypted_content)",
    ),
}

# The anthropic-beta flag a body's contents need: (what, flag).
BETAS = {
    "compaction content block": "compact-2026-01-12",
    "compact_20260112 edit": "compact-2026-01-12",
}


class Failure:
    def __init__(self, path, message):
        self.path = path
        self.message = message

    def __str__(self):
        return f"{self.path or '$'}: {self.message}"


def typed_dict_fields(cls):
    """The wire keys of a TypedDict: {wire name: (type, required)}.

    Requiredness is read from the resolved hints (`Required[...]`,
    `NotRequired[...]`), else from the class's key sets: the packages
    write their annotations as strings, which a TypedDict sorts by its
    declaring class's totality alone, blind to `Required[...]`.
    """
    hints = typing_extensions.get_type_hints(cls, include_extras=True)
    by_total = getattr(cls, "__required_keys__", frozenset())
    fields = {}
    for name, hint in hints.items():
        wire = name
        inner = hint
        required = name in by_total
        while True:
            origin = typing_extensions.get_origin(inner)
            if origin in (typing_extensions.Required, typing_extensions.NotRequired):
                required = origin is typing_extensions.Required
                inner = typing_extensions.get_args(inner)[0]
            elif origin is typing_extensions.Annotated:
                for meta in inner.__metadata__:
                    alias = getattr(meta, "alias", None)
                    if alias:
                        wire = alias
                inner = typing_extensions.get_args(inner)[0]
            else:
                break
        fields[wire] = (inner, required)
    return fields


def is_typed_dict(tp):
    return isinstance(tp, type) and typing_extensions.is_typeddict(tp)


class Checker:
    def __init__(self):
        self.used = collections.Counter()
        self.cache = {}

    def fields(self, cls):
        if cls not in self.cache:
            self.cache[cls] = typed_dict_fields(cls)
        return self.cache[cls]

    def check(self, value, tp, path):
        """Failures of `value` against `tp` (empty when it conforms)."""
        if tp is typing.Any or tp is object:
            return []
        if isinstance(tp, typing.TypeVar):
            return []
        alias_value = getattr(tp, "__value__", None)
        if alias_value is not None and not isinstance(tp, type):
            return self.check(value, alias_value, path)
        origin = typing_extensions.get_origin(tp)
        args = typing_extensions.get_args(tp)
        if origin is typing_extensions.Annotated:
            return self.check(value, args[0], path)
        if origin in (typing_extensions.Required, typing_extensions.NotRequired):
            return self.check(value, args[0], path)
        if tp is None or tp is type(None):
            return [] if value is None else [Failure(path, f"expected null, found {kind(value)}")]
        if origin is typing.Union or origin is getattr(types, "UnionType", ()):
            return self.union(value, args, path)
        if origin is typing_extensions.Literal or origin is typing.Literal:
            if value in args and type(value) in {type(a) for a in args}:
                return []
            return [Failure(path, f"{json.dumps(value)[:80]} is not one of {list(args)}")]
        if is_typed_dict(tp):
            return self.typed_dict(value, tp, path)
        if tp is str:
            return [] if isinstance(value, str) else [Failure(path, f"expected a string, found {kind(value)}")]
        if tp is bool:
            return [] if isinstance(value, bool) else [Failure(path, f"expected a boolean, found {kind(value)}")]
        if tp is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
            return [] if ok else [Failure(path, f"expected an integer, found {kind(value)}")]
        if tp is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            return [] if ok else [Failure(path, f"expected a number, found {kind(value)}")]
        if origin in (dict, collections.abc.Mapping, typing.Dict) or tp in (dict, typing.Dict):
            if not isinstance(value, dict):
                return [Failure(path, f"expected an object, found {kind(value)}")]
            if len(args) == 2:
                out = []
                for key, item in value.items():
                    out += self.check(item, args[1], f"{path}.{key}")
                return out
            return []
        if origin in (list, tuple, collections.abc.Iterable, collections.abc.Sequence, typing.List) or (
            origin is not None and getattr(origin, "__name__", "") == "SequenceNotStr"
        ):
            if not isinstance(value, list):
                return [Failure(path, f"expected an array, found {kind(value)}")]
            out = []
            for index, item in enumerate(value):
                out += self.check(item, args[0] if args else typing.Any, f"{path}[{index}]")
            return out
        if getattr(tp, "__name__", "") == "SequenceNotStr":
            return [] if isinstance(value, list) else [Failure(path, f"expected an array, found {kind(value)}")]
        # Files and other types a JSON body cannot carry.
        return [Failure(path, f"the definition's type {tp!r} cannot be checked")]

    def union(self, value, members, path):
        # A value is accepted when any member accepts it: the OpenAPI
        # document's oneOf branches overlap (a plain user message is both an
        # EasyInputMessageParam and a Message), and the packages' Unions
        # carry no exclusivity to enforce.
        # A tagged object is judged against the members whose `type` (or
        # `role`) it names, so the failure shown is the relevant one.
        if isinstance(value, dict):
            for tag in ("type", "role"):
                if tag not in value:
                    continue
                named = [m for m in members if self.tag_allows(m, tag, value[tag])]
                if named:
                    members = named
                    break
        best = None
        for member in members:
            failures = self.check(value, member, path)
            if not failures:
                return []
            # A member of the wrong shape explains less than one whose
            # failure lies deeper in the value.
            rank = (any(f.path == path for f in failures), len(failures))
            if best is None or rank < best[0]:
                best = (rank, failures)
        return best[1] if best else [Failure(path, "no member of the union matches")]

    def tag_allows(self, member, tag, tag_value):
        member = strip(member)
        if not is_typed_dict(member):
            return False
        field = self.fields(member).get(tag)
        if field is None:
            return False
        literal = strip(field[0])
        if typing_extensions.get_origin(literal) in (typing_extensions.Literal, typing.Literal):
            return tag_value in typing_extensions.get_args(literal)
        return False

    def typed_dict(self, value, cls, path):
        if not isinstance(value, dict):
            return [Failure(path, f"expected an object ({cls.__name__}), found {kind(value)}")]
        fields = self.fields(cls)
        out = []
        for key in value:
            if key not in fields:
                out.append(Failure(f"{path}.{key}", f"{cls.__name__} has no field {key!r}"))
        missing = {k for k, (_, required) in fields.items() if required and k not in value}
        allowed, source = EXCEPTIONS_MISSING_OK.get(cls.__name__, (set(), None))
        if missing and missing <= allowed:
            self.used[f"{cls.__name__} without {sorted(missing)}: {source}"] += 1
            missing = set()
        for key in sorted(missing):
            out.append(Failure(f"{path}.{key}", f"{cls.__name__} requires {key!r}"))
        for key, item in value.items():
            if key in fields:
                out += self.check(item, fields[key][0], f"{path}.{key}")
        return out


def strip(tp):
    while typing_extensions.get_origin(tp) in (
        typing_extensions.Annotated,
        typing_extensions.Required,
        typing_extensions.NotRequired,
    ):
        tp = typing_extensions.get_args(tp)[0]
    return tp


def kind(value):
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def walk_blocks(body):
    """Every content block of an Anthropic body's messages, with its path."""
    for i, message in enumerate(body.get("messages", [])):
        content = message.get("content")
        if isinstance(content, list):
            for j, block in enumerate(content):
                yield f"$.messages[{i}].content[{j}]", block


def stricter_than_definition(endpoint, body):
    """What the server rejects although the definition allows it."""
    out = []
    if endpoint.startswith("anthropic"):
        for path, block in walk_blocks(body):
            keys, source = EXCEPTIONS_FORBIDDEN.get(block.get("type"), (set(), None))
            for key in sorted(keys & set(block)):
                out.append(Failure(f"{path}.{key}", f"the server rejects {key!r} on a {block['type']} block ({source})"))
    return out


def betas_needed(endpoint, body):
    needed = set()
    if not endpoint.startswith("anthropic"):
        return needed
    for _, block in walk_blocks(body):
        if block.get("type") == "compaction":
            needed.add(BETAS["compaction content block"])
    edits = (body.get("context_management") or {}).get("edits") or []
    for edit in edits:
        if edit.get("type") == "compact_20260112":
            needed.add(BETAS["compact_20260112 edit"])
    return needed


def main(folder):
    import importlib

    checker = Checker()
    files = sorted(Path(folder).glob("*.json"))
    if not files:
        print(f"wire: no bodies in {folder}")
        return 1
    passed = failed = 0
    for file in files:
        case = json.loads(file.read_text())
        endpoint = case["endpoint"]
        module, streaming, whole = ENDPOINTS[endpoint]
        params = getattr(importlib.import_module(module), streaming if case.get("streaming") else whole)
        body = case["body"]
        failures = checker.check(body, params, "$")
        failures += stricter_than_definition(endpoint, body)
        sent = {f.strip() for f in case.get("headers", {}).get("anthropic-beta", "").split(",") if f.strip()}
        for flag in sorted(betas_needed(endpoint, body) - sent):
            failures.append(Failure("headers.anthropic-beta", f"the body needs beta {flag!r}, sent {sorted(sent)}"))
        if failures:
            failed += 1
            print(f"wire: FAILED {file.name} ({endpoint}, {params.__name__})")
            for failure in failures[:20]:
                print(f"    {failure}")
            if len(failures) > 20:
                print(f"    ... and {len(failures) - 20} more")
        else:
            passed += 1
    for exception, count in sorted(checker.used.items()):
        print(f"wire: exception used {count}x: {exception}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
