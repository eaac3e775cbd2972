"""The mission page: one self-contained HTML document, for ``rho serve`` and for reports.

``page.html`` holds the skeleton, ``page.css`` the style, ``render.js`` the renderer and
``page.js`` what feeds it (embedded data, or the API and its event stream); they are put
inline, the two scripts as one, so the page needs nothing else (no CDN, no network). A
Content-Security-Policy allows exactly these two inline blocks, by their SHA-256, and nothing
from elsewhere. The live page carries no data (it reads the API); a report carries its data as
JSON in a ``<script type="application/json">`` element, escaped so that no value can close it.

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from importlib import resources
from typing import Any

__all__ = ["embed_json", "live_page", "report_page"]

_LIVE_POLICY = (
    "default-src 'none'; script-src {script}; style-src {style}; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
# A file opened from disk reads nothing: everything it shows is in it.
_REPORT_POLICY = (
    "default-src 'none'; script-src {script}; style-src {style}; base-uri 'none'; "
    "form-action 'none'"
)


def live_page() -> tuple[str, str]:
    """The page ``rho serve`` serves at ``/``, and its Content-Security-Policy header."""
    return _live()


@functools.cache
def _live() -> tuple[str, str]:
    return _assemble(None), _policy(_LIVE_POLICY)


def report_page(payload: dict[str, Any]) -> str:
    """The page showing *payload* (``{"mission": ..., "tails": ..., "text": ...}``) by itself."""
    policy = _policy(_REPORT_POLICY).replace('"', "&quot;")
    return _assemble(payload, f'<meta http-equiv="Content-Security-Policy" content="{policy}">')


def embed_json(data: object) -> str:
    """*data* as JSON that is safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _assemble(data: object, policy_tag: str = "") -> str:
    html = _asset("page.html")
    # One replacement each, in this order: the data goes last, so nothing in it is replaced.
    html = html.replace("<!--rho:policy-->", policy_tag, 1)
    html = html.replace("/*rho:css*/", _asset("page.css"), 1)
    html = html.replace("/*rho:js*/", _script(), 1)
    return html.replace("/*rho:data*/", embed_json(data), 1)


def _policy(template: str) -> str:
    return template.format(script=_digest(_script()), style=_digest(_asset("page.css")))


def _script() -> str:
    return _asset("render.js") + _asset("page.js")


def _digest(text: str) -> str:
    value = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    return f"'sha256-{value}'"


@functools.cache
def _asset(name: str) -> str:
    return resources.files("rho_mission.serve").joinpath(name).read_text(encoding="utf-8")
