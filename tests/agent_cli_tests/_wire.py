"""The four provider APIs of the scripted model server: each turn in each API's wire shape.

Each API says which requests are main (they take a turn of the script), what its error body
looks like, and writes a turn as its answer: plain JSON, or a stream of server-sent events in
chunked transfer encoding (claude reads nothing else). The tool each turn calls is looked up in
the tools the request offered, so a CLI that renames a tool is seen in the record, not guessed.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from ._turns import Reply, RunCommand, Turn, Usage, WriteFile

__all__ = ["Api", "Stream", "api_of", "reports_usage", "send_json"]


class Api(Protocol):
    """One provider's API, as far as the CLIs need it."""

    def is_main(self, path: str, body: Any) -> bool:
        """Whether the request takes the next turn of the script."""

    def error(self, status: int) -> dict[str, Any]:
        """The body of an HTTP *status* error in this API's shape."""

    def answer(self, handler: BaseHTTPRequestHandler, body: Any, turn: Turn, n: int) -> None:
        """Write *turn* (a ``WriteFile``, ``RunCommand`` or ``Reply``) as the answer to *body*."""


def send_json(handler: BaseHTTPRequestHandler, status: int, document: Any) -> None:
    """Answer with *document* as JSON and HTTP *status*."""
    data = json.dumps(document).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    if status == 429:
        handler.send_header("Retry-After", "1")
    handler.end_headers()
    handler.wfile.write(data)


class Stream:
    """A server-sent event stream in chunked transfer encoding."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._out = handler.wfile
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

    def event(self, data: Any, name: str | None = None) -> None:
        """Send one event (*name*: its ``event:`` line; the data is JSON unless a str)."""
        text = data if isinstance(data, str) else json.dumps(data)
        line = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
        self._chunk(line.encode())

    def close(self) -> None:
        """End the stream (the last, empty chunk)."""
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self._out.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self._out.flush()


def _tool_names(body: Any) -> list[str]:
    names: list[str] = []
    for tool in body.get("tools") or []:
        names.append(tool.get("name") or (tool.get("function") or {}).get("name") or "")
        names += [d.get("name", "") for d in tool.get("functionDeclarations") or []]
    return names


def _pick(body: Any, *candidates: str) -> str:
    """The first of *candidates* the request offers (the first one if it offers none)."""
    offered = _tool_names(body)
    return next((name for name in candidates if name in offered), candidates[0])


def _status_word(status: int) -> str:
    return "rate_limit_error" if status == 429 else "api_error"


class Anthropic:
    """Anthropic Messages (claude): tool_use blocks, streamed or not."""

    def is_main(self, path: str, body: Any) -> bool:
        """Requests that offer tools; claude's title request offers none."""
        return "count_tokens" not in path and bool(body.get("tools"))

    def error(self, status: int) -> dict[str, Any]:
        """Anthropic's error body."""
        word = _status_word(status)
        return {"type": "error", "error": {"type": word, "message": f"scripted {status}"}}

    def answer(self, handler: BaseHTTPRequestHandler, body: Any, turn: Turn, n: int) -> None:
        """A message whose one block is the turn's text or tool call."""
        if "count_tokens" in handler.path:
            send_json(handler, 200, {"input_tokens": 10})
            return
        assert isinstance(turn, WriteFile | RunCommand | Reply)
        block, stop = self._block(body, turn, n)
        if body.get("stream"):
            self._stream(handler, body, block, stop, turn.usage, n)
        else:
            message = self._message(body, [block], stop, turn.usage, n)
            send_json(handler, 200, message)

    def _block(self, body: Any, turn: Turn, n: int) -> tuple[dict[str, Any], str]:
        if isinstance(turn, WriteFile):
            name = _pick(body, "Write")
            tool_input = {"file_path": turn.path, "content": turn.content}
        elif isinstance(turn, RunCommand):
            name = _pick(body, "Bash")
            tool_input = {"command": turn.command, "description": "scripted command"}
        else:
            assert isinstance(turn, Reply)
            return {"type": "text", "text": turn.text}, "end_turn"
        return {
            "type": "tool_use",
            "id": f"toolu_{n}",
            "name": name,
            "input": tool_input,
        }, "tool_use"

    def _usage(self, usage: Usage, output: int) -> dict[str, int]:
        return {
            "input_tokens": usage.input_tokens - usage.cached_tokens,
            "cache_read_input_tokens": usage.cached_tokens,
            "cache_creation_input_tokens": 0,
            "output_tokens": output,
        }

    def _message(
        self, body: Any, content: list[Any], stop: str | None, usage: Usage, n: int
    ) -> dict[str, Any]:
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "scripted"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": self._usage(usage, usage.output_tokens if stop else 0),
        }

    def _stream(
        self,
        handler: BaseHTTPRequestHandler,
        body: Any,
        block: Any,
        stop: str,
        usage: Usage,
        n: int,
    ) -> None:
        stream = Stream(handler)
        start = self._message(body, [], None, usage, n)
        stream.event({"type": "message_start", "message": start}, "message_start")
        self._stream_block(stream, block)
        delta = {"stop_reason": stop, "stop_sequence": None}
        ending = {
            "type": "message_delta",
            "delta": delta,
            "usage": {"output_tokens": usage.output_tokens},
        }
        stream.event(ending, "message_delta")
        stream.event({"type": "message_stop"}, "message_stop")
        stream.close()

    def _stream_block(self, stream: Stream, block: dict[str, Any]) -> None:
        if block["type"] == "text":
            first, delta = {**block, "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            first = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        stream.event(
            {"type": "content_block_start", "index": 0, "content_block": first},
            "content_block_start",
        )
        stream.event(
            {"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"
        )
        stream.event({"type": "content_block_stop", "index": 0}, "content_block_stop")


def _patch_adding(path: str, content: str) -> str:
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


class OpenAIResponses:
    """OpenAI Responses (codex): streamed ``response.*`` events."""

    def is_main(self, path: str, body: Any) -> bool:
        """Requests that offer tools."""
        return bool(body.get("tools"))

    def error(self, status: int) -> dict[str, Any]:
        """OpenAI's error body."""
        code = "rate_limit_exceeded" if status == 429 else "server_error"
        return {
            "error": {"type": code, "code": code, "message": f"scripted {status}", "param": None}
        }

    def answer(self, handler: BaseHTTPRequestHandler, body: Any, turn: Turn, n: int) -> None:
        """One output item (a message or a tool call), then ``response.completed`` with usage."""
        assert isinstance(turn, WriteFile | RunCommand | Reply)
        item = self._item(body, turn, n)
        stream = Stream(handler)
        response = {"id": f"resp_{n}", "object": "response", "status": "in_progress", "output": []}
        stream.event({"type": "response.created", "response": response}, "response.created")
        added = {"type": "response.output_item.added", "output_index": 0, "item": item}
        stream.event(added, "response.output_item.added")
        if item["type"] == "message":
            text = item["content"][0]["text"]
            delta = {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            }
            stream.event(delta, "response.output_text.delta")
        done = {"type": "response.output_item.done", "output_index": 0, "item": item}
        stream.event(done, "response.output_item.done")
        completed = {
            **response,
            "status": "completed",
            "output": [item],
            "usage": self._usage(turn.usage),
        }
        stream.event({"type": "response.completed", "response": completed}, "response.completed")
        stream.close()

    def _usage(self, usage: Usage) -> dict[str, Any]:
        return {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        }

    def _item(self, body: Any, turn: Turn, n: int) -> dict[str, Any]:
        if isinstance(turn, Reply):
            content = [{"type": "output_text", "text": turn.text, "annotations": []}]
            return {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        if isinstance(turn, WriteFile):
            return self._call(
                body, "apply_patch", {"input": _patch_adding(turn.path, turn.content)}, n
            )
        assert isinstance(turn, RunCommand)
        name = _pick(body, "exec_command", "shell_command", "shell")
        arguments = {
            "exec_command": {"cmd": turn.command},
            "shell_command": {"command": turn.command},
        }
        return self._call(
            body, name, arguments.get(name, {"command": ["bash", "-lc", turn.command]}), n
        )

    def _call(self, body: Any, name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
        tools: list[dict[str, Any]] = body.get("tools") or []
        tool = next((t for t in tools if t.get("name") == name), {})
        if tool.get("type") == "custom":
            text = arguments.get("input", json.dumps(arguments))
            return {
                "type": "custom_tool_call",
                "id": f"ctc_{n}",
                "call_id": f"call_{n}",
                "name": name,
                "input": text,
                "status": "completed",
            }
        return {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": name,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }


def _aider_text(turn: Turn) -> str:
    """The turn as aider's ``diff`` edit format (a SEARCH/REPLACE block) or plain text."""
    if isinstance(turn, WriteFile):
        body = turn.content if turn.content.endswith("\n") else turn.content + "\n"
        return f"{turn.path}\n```\n<<<<<<< SEARCH\n=======\n{body}>>>>>>> REPLACE\n```\n"
    if isinstance(turn, RunCommand):
        return f"```bash\n{turn.command}\n```\n"
    assert isinstance(turn, Reply)
    return turn.text


class OpenAIChat:
    """OpenAI Chat Completions (aider through litellm): no tools, edits in the text."""

    def is_main(self, path: str, body: Any) -> bool:
        """Every request: aider's side requests (commit messages, summaries) are scripted too."""
        return True

    def error(self, status: int) -> dict[str, Any]:
        """OpenAI's error body."""
        return OpenAIResponses().error(status)

    def answer(self, handler: BaseHTTPRequestHandler, body: Any, turn: Turn, n: int) -> None:
        """A ``chat.completion`` (or its chunks when the request streams) with usage."""
        assert isinstance(turn, WriteFile | RunCommand | Reply)
        usage = {
            "prompt_tokens": turn.usage.input_tokens,
            "completion_tokens": turn.usage.output_tokens,
            "total_tokens": turn.usage.input_tokens + turn.usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": turn.usage.cached_tokens},
        }
        head = {
            "id": f"chatcmpl-{n}",
            "created": 1700000000,
            "model": body.get("model", "scripted"),
        }
        text = _aider_text(turn)
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            send_json(
                handler,
                200,
                {**head, "object": "chat.completion", "choices": [choice], "usage": usage},
            )
        stream = Stream(handler)
        chunk = {**head, "object": "chat.completion.chunk"}
        delta = {"role": "assistant", "content": text}
        stream.event({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        stream.event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        stream.event({**chunk, "choices": [], "usage": usage})
        stream.event("[DONE]")
        stream.close()


def _json_for(schema: Any) -> Any:
    """A small document that fits *schema* (an enum's first value: ``user`` for gemini's
    next-speaker check, so the turn ends)."""
    kind = schema.get("type", "object").lower() if isinstance(schema, dict) else "string"
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        return {k: _json_for(v) for k, v in (schema.get("properties") or {}).items()}
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)  # gemini's router wants a complexity_score of 1 or more
    return {"boolean": False, "array": []}.get(kind, "scripted")


class Gemini:
    """Gemini (gemini-cli): ``generateContent``, streamed or not, and ``countTokens``."""

    def is_main(self, path: str, body: Any) -> bool:
        """Requests that offer tools; gemini's checks (next speaker, routing) offer none."""
        return ":countTokens" not in path and bool(body.get("tools"))

    def error(self, status: int) -> dict[str, Any]:
        """Google's error body."""
        word = "RESOURCE_EXHAUSTED" if status == 429 else "INTERNAL"
        return {"error": {"code": status, "message": f"scripted {status}", "status": word}}

    def answer(self, handler: BaseHTTPRequestHandler, body: Any, turn: Turn, n: int) -> None:
        """One candidate holding the turn's text or function call, with ``usageMetadata``."""
        if ":countTokens" in handler.path:
            send_json(handler, 200, {"totalTokens": 10})
            return
        assert isinstance(turn, WriteFile | RunCommand | Reply)
        usage = turn.usage
        candidate = {
            "content": {"role": "model", "parts": [self._part(body, turn)]},
            "finishReason": "STOP",
            "index": 0,
        }
        document = {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": usage.input_tokens,
                "candidatesTokenCount": usage.output_tokens,
                "cachedContentTokenCount": usage.cached_tokens,
                "totalTokenCount": usage.input_tokens + usage.output_tokens,
            },
            "modelVersion": "scripted",
            "responseId": f"resp_{n}",
        }
        if ":streamGenerateContent" not in handler.path:
            send_json(handler, 200, document)
            return
        stream = Stream(handler)
        stream.event(document)
        stream.close()

    def _part(self, body: Any, turn: Turn) -> dict[str, Any]:
        if isinstance(turn, WriteFile):
            args = {"file_path": turn.path, "content": turn.content}
            return {"functionCall": {"name": _pick(body, "write_file"), "args": args}}
        if isinstance(turn, RunCommand):
            args = {"command": turn.command}
            return {"functionCall": {"name": _pick(body, "run_shell_command"), "args": args}}
        assert isinstance(turn, Reply)
        schema = (body.get("generationConfig") or {}).get("responseJsonSchema") or (
            body.get("generationConfig") or {}
        ).get("responseSchema")
        return {"text": json.dumps(_json_for(schema)) if schema else turn.text}


def reports_usage(path: str) -> bool:
    """Whether the answer to a request on *path* reports usage (token counting does not)."""
    return "count_tokens" not in path and ":countTokens" not in path


def api_of(path: str) -> Api | None:
    """The API a request path belongs to, or None."""
    if "/messages" in path:
        return Anthropic()
    if path.split("?")[0].endswith("/responses"):
        return OpenAIResponses()
    if path.split("?")[0].endswith("/chat/completions"):
        return OpenAIChat()
    if "Content" in path or ":countTokens" in path:
        return Gemini()
    return None
