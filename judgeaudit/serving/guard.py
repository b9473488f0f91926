"""Who may use ``judgeaudit serve``, and how much one request may send: checked before the
app reads a byte of the body, every refusal in OpenAI's error shape.

- The Host header must name the server (``allowed_hosts``; loopback names when it is bound
  to loopback), so that a web page whose name is rebound to 127.0.0.1 cannot reach it
  from a browser (DNS rebinding), as Starlette's ``TrustedHostMiddleware`` checks.
- With an API key, every request must carry it as ``Authorization: Bearer KEY`` (401
  otherwise), compared in constant time.
- A body longer than ``max_body_bytes`` is a 413: at once when its Content-Length says so,
  else (a chunked body) as soon as the bytes received pass the limit.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence

from fastapi import HTTPException
from fastapi.responses import JSONResponse

LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
KEY_ENV = "JUDGEAUDIT_SERVE_API_KEY"


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` serves this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def access_for(host: str, api_key: str | None, allowed_hosts: Sequence[str] | None
               ) -> tuple[list[str] | None, str | None]:
    """(the names the Host header may give, None for any; a warning to print, or None) for a
    server bound to ``host``. Bound to loopback: loopback's names only. Beyond loopback: any
    name unless ``allowed_hosts`` says, and a warning when no key keeps strangers out."""
    if allowed_hosts is not None:
        hosts = None if "*" in allowed_hosts else list(allowed_hosts)
    else:
        hosts = list(LOOPBACK_HOSTS) if is_loopback(host) else None
    warning = None
    if not is_loopback(host) and not api_key:
        warning = (f"judgeaudit: warning: serving on {host}, beyond loopback, without an API key: anyone "
                   f"who can reach this port can use the models (set ${KEY_ENV} or --api-key)")
    return hosts, warning


def openai_error(status: int, message: str, param: str | None = None, code: str | int | None = None,
                 headers: dict[str, str] | None = None) -> JSONResponse:
    """An error answer in the shape OpenAI's API gives and its clients read."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse(status_code=status, headers=headers,
                        content={"error": {"message": message, "type": kind, "param": param,
                                           "code": status if code is None else code}})


def host_name(header: str) -> str:
    """The host a Host header names, lower-cased, without its port ("[::1]:8000": "[::1]")."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[:header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def too_large(limit: int) -> str:
    return (f"body: more than {limit} bytes ({limit / 2 ** 20:g} MB, this server's limit; "
            "judgeaudit serve --max-body-mb raises it)")


class Guard:
    """A plain ASGI middleware (Starlette's BaseHTTPMiddleware would read the body first)."""

    def __init__(self, inner, *, api_key: str | None, allowed_hosts: Sequence[str] | None,
                 max_body_bytes: int) -> None:
        self.inner = inner
        self.key = api_key.encode() if api_key else None
        anyone = allowed_hosts is None or "*" in allowed_hosts
        self.hosts = None if anyone else {h.lower() for h in allowed_hosts}
        self.max_body = max_body_bytes

    def refusal(self, headers: dict[bytes, bytes]) -> JSONResponse | None:
        """The answer a request gets before its body is read, or None to let it in."""
        if self.hosts is not None:
            host = host_name(headers.get(b"host", b"").decode("latin-1"))
            if host not in self.hosts:
                return openai_error(400, f"Host: {host!r} is not a name of this server (allowed: "
                                         f"{sorted(self.hosts)}; judgeaudit serve --allowed-hosts)", "Host")
        if self.key is not None:
            scheme, _, token = headers.get(b"authorization", b"").partition(b" ")
            if not (scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.key)):
                return openai_error(401, "Incorrect or missing API key: send it as 'Authorization: Bearer "
                                         "KEY' (the key judgeaudit serve was given by --api-key or "
                                         f"${KEY_ENV})",
                                    code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})
        length = headers.get(b"content-length")
        if length is not None and (not length.strip().isdigit() or int(length) > self.max_body):
            return openai_error(413, too_large(self.max_body))
        return None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        refusal = self.refusal({k.lower(): v for k, v in scope["headers"]})
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        received = 0

        async def counted() -> dict:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:  # the app answers it (its HTTPException handler)
                    raise HTTPException(413, detail=too_large(self.max_body))
            return message

        await self.inner(scope, counted, send)
