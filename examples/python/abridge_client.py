#!/usr/bin/env python3
"""A client for `abridge serve`, with the Python standard library only.

An agent written in Python keeps its session compacted through the
service: it appends each turn's messages, calls after-turn so Maintenance
compacts when the context passes the threshold, and asks for the request
to send next. No Rust toolchain is needed on the agent's side.

Run as a script, it replays a real coding-agent session (pi's JSONL format,
for example assets/sessions/pi-mono__large-session.jsonl) through a live
service under a small window with the model-free `digest` method, and
prints one JSON line of figures at the end:

    abridge serve --listen 127.0.0.1:8787 --store /tmp/sessions \\
        --tokens-file tokens.txt &
    python3 examples/python/abridge_client.py --url http://127.0.0.1:8787 \\
        --token "$TOKEN" --sample assets/sessions/pi-mono__large-session.jsonl
"""

import argparse
import json
import sys
import urllib.error
import urllib.request


class AbridgeError(Exception):
    """A refused call: the HTTP status and the service's error code."""

    def __init__(self, status, code, message):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code


class Abridge:
    """The service's JSON API, one method per route."""

    def __init__(self, base_url, token, timeout=300):
        self.base = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _call(self, method, path, body=None, raw=False):
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read().decode("utf-8")
        except urllib.error.HTTPError as error:
            text = error.read().decode("utf-8", "replace")
            try:
                detail = json.loads(text)["error"]
                raise AbridgeError(error.code, detail["code"], detail["message"]) from None
            except (ValueError, KeyError, TypeError):
                raise AbridgeError(error.code, "http", text) from None
        return text if raw else json.loads(text)

    def create_session(self, session_id=None, model=None, window=None, settings=None):
        body = {}
        for key, value in (("id", session_id), ("model", model), ("window", window), ("settings", settings)):
            if value is not None:
                body[key] = value
        return self._call("POST", "/v1/sessions", body)

    def sessions(self):
        return self._call("GET", "/v1/sessions")["sessions"]

    def append(self, session_id, messages, usage=None):
        body = {"messages": messages}
        if usage is not None:
            body["usage"] = usage
        return self._call("POST", f"/v1/sessions/{session_id}/messages", body)

    def after_turn(self, session_id):
        return self._call("POST", f"/v1/sessions/{session_id}/after-turn", {})

    def on_error(self, session_id, error, message=None):
        body = {"error": error}
        if message is not None:
            body["message"] = message
        return self._call("POST", f"/v1/sessions/{session_id}/on-error", body)

    def compact(self, session_id, methods=None, instructions=None):
        body = {"methods": methods or []}
        if instructions is not None:
            body["instructions"] = instructions
        return self._call("POST", f"/v1/sessions/{session_id}/compact", body)

    def request(self, session_id, provider=None):
        query = f"?provider={provider}" if provider else ""
        return self._call("GET", f"/v1/sessions/{session_id}/request{query}")

    def context(self, session_id):
        return self._call("GET", f"/v1/sessions/{session_id}/context")

    def stats(self, session_id):
        return self._call("GET", f"/v1/sessions/{session_id}/stats")

    def recall(self, session_id, ref=None, query=None, toc=None):
        body = {key: value for key, value in (("ref", ref), ("query", query), ("toc", toc)) if value is not None}
        return self._call("POST", f"/v1/sessions/{session_id}/recall", body)["text"]

    def report(self, session_id):
        return self._call("GET", f"/v1/sessions/{session_id}/report", raw=True)


def pi_blocks(content):
    """pi's content blocks in abridge's form."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": block.get("text", "")})
        elif kind == "thinking":
            blocks.append({"type": "thinking", "thinking": block.get("thinking", "")})
        elif kind == "toolCall":
            blocks.append({"type": "tool_call", "id": block["id"], "name": block["name"],
                           "arguments": block.get("arguments", {})})
        elif kind == "image":
            blocks.append({"type": "image", "source": {"kind": "base64",
                           "media_type": block.get("mimeType", "image/png"), "data": block.get("data", "")}})
    return blocks


def pi_message(message):
    """One pi message in abridge's form, or None for one to skip."""
    role = message.get("role")
    if role == "user":
        return {"role": "user", "content": pi_blocks(message["content"])}
    if role == "assistant":
        content = pi_blocks(message["content"])
        if not content:
            return None  # an aborted reply with nothing in it
        origin = {"kind": "model", "provider": message.get("provider", ""), "model": message.get("model", "")}
        return {"role": "assistant", "content": content, "meta": {"origin": origin}}
    if role == "toolResult":
        result = {"type": "tool_result", "call_id": message["toolCallId"],
                  "content": pi_blocks(message["content"])}
        if message.get("isError"):
            result["is_error"] = True
        return {"role": "tool", "content": [result]}
    return None


def pi_turns(path):
    """The sample's messages, cut after each assistant reply: each batch is
    what an agent appends before it next calls after-turn."""
    batch = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event.get("type") != "message":
                continue
            message = pi_message(event["message"])
            if message is None:
                continue
            batch.append(message)
            if message["role"] == "assistant":
                yield batch
                batch = []
    if batch:
        yield batch


def replay(client, sample, session_id, model, window, provider):
    """Appends the sample turn by turn, calling after-turn after each, and
    returns the figures of the run."""
    created = client.create_session(session_id, model=model, window=window,
                                    settings={"method_order": ["prune", "digest"]})
    session_id = created["id"]
    threshold = created["limits"]["threshold"]
    turns = passes = landed = 0
    highest_after = 0
    for batch in pi_turns(sample):
        client.append(session_id, batch)
        turns += 1
        pass_ = client.after_turn(session_id)
        if pass_["status"] != "not_needed":
            passes += 1
        landed += len(pass_["outcomes"])
        highest_after = max(highest_after, pass_["tokens_after"])
    stats = client.stats(session_id)
    shaped = client.request(session_id, provider=provider)
    toc = client.recall(session_id, toc=True)
    return {
        "session": session_id,
        "turns": turns,
        "passes": passes,
        "landed": landed,
        "threshold": threshold,
        "tokens": stats["tokens"],
        "highest_after_pass": highest_after,
        "events": stats["events"],
        "surface_messages": stats["surface_messages"],
        "request_messages": len(shaped["messages"]),
        "request_provider": shaped.get("provider"),
        "request_body_bytes": len(json.dumps(shaped.get("body", {}))),
        "recall_toc_lines": len(toc.splitlines()),
        "listed": session_id in client.sessions(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the service, e.g. http://127.0.0.1:8787")
    parser.add_argument("--token", required=True, help="a bearer token from the service's tokens file")
    parser.add_argument("--sample", required=True, help="a pi session file (JSONL)")
    parser.add_argument("--session", default=None, help="session id (default: the service picks one)")
    parser.add_argument("--model", default="claude-sonnet-4-5")
    parser.add_argument("--window", type=int, default=32000, help="context window to compact under")
    parser.add_argument("--provider", default="anthropic", help="shape the final request for this provider")
    args = parser.parse_args()
    try:
        figures = replay(Abridge(args.url, args.token), args.sample, args.session,
                         args.model, args.window, args.provider)
    except AbridgeError as error:
        print(f"abridge_client: {error}", file=sys.stderr)
        return 1
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
