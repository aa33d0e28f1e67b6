"""The official `anthropic` and `openai` Python SDKs, pointed at the proxy.

Usage: clients.py PROXY_URL. Each call is made with tools, streamed and
not; one line of JSON per call on stdout: what the SDK parsed.
"""

import json
import sys

import anthropic
import openai

proxy = sys.argv[1]
tool_anthropic = {"name": "read", "description": "read a file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
tool_openai = {"type": "function", "function": {"name": "read", "description": "read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}

claude = anthropic.Anthropic(base_url=proxy, api_key="sk-ant-sdk-SECRET-1", max_retries=0)
history = [{"role": "user", "content": "read src/lib.rs"}]
reply = claude.messages.create(model="claude-x", max_tokens=100, tools=[tool_anthropic], messages=history)
print(json.dumps({"call": "anthropic", "text": reply.content[0].text, "tool": reply.content[1].name}))
history += [
    {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in reply.content]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": reply.content[1].id, "content": "fn main() {}"}]},
]
with claude.messages.stream(model="claude-x", max_tokens=100, tools=[tool_anthropic], messages=history) as stream:
    final = stream.get_final_message()
print(json.dumps({"call": "anthropic-stream", "text": final.content[0].text}))

gpt = openai.OpenAI(base_url=proxy + "/v1", api_key="sk-openai-sdk-SECRET-2", max_retries=0)
chat = [{"role": "user", "content": "read src/lib.rs"}]
done = gpt.chat.completions.create(model="gpt-x", messages=chat, tools=[tool_openai])
call = done.choices[0].message.tool_calls[0]
print(json.dumps({"call": "chat", "text": done.choices[0].message.content, "tool": call.function.name}))
chat += [done.choices[0].message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "fn main() {}"}]
pieces = []
for chunk in gpt.chat.completions.create(model="gpt-x", messages=chat, tools=[tool_openai], stream=True):
    if chunk.choices and chunk.choices[0].delta.content:
        pieces.append(chunk.choices[0].delta.content)
print(json.dumps({"call": "chat-stream", "text": "".join(pieces)}))

response = gpt.responses.create(model="gpt-x", input="read src/lib.rs", tools=[{"type": "function", "name": "read", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}])
print(json.dumps({"call": "responses", "text": response.output_text}))
