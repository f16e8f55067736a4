"""The server's one HTTP client: page fetches and provider API calls both go through it.

:class:`HttpClient` is a thin layer over one ``aiohttp.ClientSession`` (httpx's client layer
cost more CPU per request than the request itself on the hot path of index checks). What it
adds, the same for every caller:

- errors: whatever aiohttp or asyncio raises becomes a :class:`~seojobs.fetch.errors.FetchError`
  with its kind (``errors.from_transport``), so callers handle one tree;
- time: aiohttp's connect and read timeouts, plus a deadline for the whole exchange (a server
  that trickles bytes just faster than the read timeout would otherwise hold a worker forever);
- size: a body cap; the body is decoded (gzip, deflate, br) by aiohttp in bounded pieces and
  reading stops at the cap (pages are cut and marked, an API answer over it is refused);
- headers: read as ASCII, else UTF-8, else Latin-1 (never lone surrogates);
- proxies, one policy: ``env_proxies=True`` (provider APIs) honours ``HTTP_PROXY`` /
  ``HTTPS_PROXY`` / ``NO_PROXY`` (looked up once per origin, not per request); the page
  fetcher never uses a proxy, because its connector pins each connection to addresses the
  SSRF guard validated, and a proxy would connect to the page's host instead of us, where
  the guard cannot see the address.

``connector`` builds the session's connector: the fetcher's pins connections
(``fetch.transport.PinnedConnector``); tests pass one that records or refuses at the network
edge.
"""

from __future__ import annotations

import asyncio
import base64
import json as jsonlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from seojobs import outside
from seojobs.fetch import errors
from seojobs.fetch.closing import Closing
from seojobs.fetch.errors import FetchError, UnreadableBody
from seojobs.fetch.result import Headers, header_charset

CHUNK = 64 * 1024
# aiohttp's default is 8 KiB per header line; real sites send longer ones (cookies, CSP).
MAX_HEADER_LINE = 64 * 1024
# What aiohttp decodes here, each in bounded pieces: br with the ``brotli`` dependency.
ACCEPT_ENCODING = "gzip, deflate, br"

Connector = Callable[[], aiohttp.BaseConnector]
BodyWanted = Callable[[int, Headers], bool]
_NO_JSON: Any = object()


@dataclass(slots=True)
class Response:
    """One HTTP answer: status, headers and the decoded body (``truncated``: cut at the cap)."""

    status: int
    headers: Headers
    body: bytes = b""
    truncated: bool = False

    @property
    def text(self) -> str:
        """The body as text: the charset of ``Content-Type``, else UTF-8 (errors replaced)."""
        charset = header_charset(self.headers.get("content-type"))
        try:
            return self.body.decode(charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON; raises ``ValueError`` when it is not JSON or nests deeper
        than ``seojobs.outside.MAX_DEPTH`` (every provider's and registry's answer)."""
        return outside.loads(self.body)


def decoded_headers(response: aiohttp.ClientResponse) -> Headers:
    """The response headers, each value as ASCII, else UTF-8, else Latin-1.

    aiohttp decodes values as UTF-8 with surrogate escapes, so a value that is not UTF-8
    would keep lone surrogates (which JSON columns refuse).
    """
    headers = response.headers
    if "".join(headers.values()).isascii():  # nearly always: one look in C
        return headers
    raw = response.raw_headers
    try:
        for name, value in raw:
            name.decode(), value.decode()
        encoding = "utf-8"
    except UnicodeDecodeError:
        encoding = "iso-8859-1"
    return CIMultiDictProxy(CIMultiDict((n.decode(encoding), v.decode(encoding)) for n, v in raw))


async def _read_capped(content: aiohttp.StreamReader, limit: int) -> tuple[bytes, bool]:
    """Read at most ``limit`` bytes of the (decoded) body; stop as soon as it is exceeded."""
    if content.is_eof():
        # The whole body has arrived (with the headers, for most small answers): taken from
        # the buffer at once (at most limit + 1 bytes of it), no read awaited per chunk.
        data = content.read_nowait(limit + 1)
        return (data[:limit], True) if len(data) > limit else (data, False)
    chunks: list[bytes] = []
    size = 0
    async for chunk in content.iter_chunked(CHUNK):
        room = limit - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _encode_body(
    content: bytes | None, json: Any, form: Mapping[str, str] | None
) -> tuple[bytes | None, str | None]:
    """(body, its Content-Type) of one of ``content``, ``json`` or ``form``."""
    if json is not _NO_JSON:
        text = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode(), "application/json"
    if form is not None:
        return urlencode(form).encode(), "application/x-www-form-urlencoded"
    return content, None


def _basic_auth(user: str, password: str) -> str:
    # UTF-8, as RFC 7617 advises (aiohttp's helper refuses a ":" in the user name, which
    # would then surface as a crash instead of the provider's 401).
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


class HttpClient(Closing):
    """One aiohttp session with our errors, timeouts, body cap, header decoding and proxy
    policy (see the module's docstring). Opened on first use; ``aclose()`` closes it."""

    def __init__(
        self,
        *,
        headers: Mapping[str, str],
        connect_timeout: float,
        read_timeout: float,
        deadline: float,
        max_bytes: int,
        connector: Connector | None = None,
        cookies: bool = False,
        env_proxies: bool = False,
    ) -> None:
        self.deadline = deadline
        self.max_bytes = max_bytes
        self._headers = dict(headers)
        # aiohttp's ``connect`` covers waiting for a pooled connection and opening a new one.
        self._timeout = aiohttp.ClientTimeout(
            total=None,
            connect=read_timeout + connect_timeout,
            sock_connect=connect_timeout,
            sock_read=read_timeout,
        )
        self._connector = connector or (lambda: aiohttp.TCPConnector(limit=100))
        self._cookies = cookies
        self._env_proxies = env_proxies
        self._proxies: dict[tuple[str, str | None, int | None], tuple[URL | None, str | None]] = {}
        self._session: aiohttp.ClientSession | None = None

    @property
    def closed(self) -> bool:
        return self._session is None or self._session.closed

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=self._connector(),
                auto_decompress=True,  # bounded pieces since aiohttp 3.13.3 (CVE-2025-69223)
                # trust_env would ask for the environment's proxies in a thread on every
                # request; the policy is applied per origin in _proxy_for instead.
                trust_env=False,
                cookie_jar=(
                    # A site's cookies go back to it within this client (one job); unsafe:
                    # also for IP-address hosts.
                    aiohttp.CookieJar(unsafe=True) if self._cookies else aiohttp.DummyCookieJar()
                ),
                headers=self._headers,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"),
                timeout=self._timeout,
                max_line_size=MAX_HEADER_LINE,
                max_field_size=MAX_HEADER_LINE,
            )
        return self._session

    def _proxy_for(self, url: URL) -> tuple[URL | None, str | None]:
        """(proxy, its Proxy-Authorization) for ``url``; (None, None) when direct."""
        if not self._env_proxies:
            return None, None
        origin = (url.scheme, url.host, url.port)
        if origin not in self._proxies:
            try:
                proxy, auth = get_env_proxy_for_url(url)  # NO_PROXY, netrc credentials
            except LookupError:
                self._proxies[origin] = (None, None)
            else:
                self._proxies[origin] = (proxy, auth.encode() if auth else None)
        return self._proxies[origin]

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def get(self, url: str | URL, **options: Any) -> Response:
        return await self.request("GET", url, **options)

    async def post(self, url: str | URL, **options: Any) -> Response:
        return await self.request("POST", url, **options)

    async def request(
        self,
        method: str,
        url: str | URL,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        json: Any = _NO_JSON,
        form: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        truncate: bool = False,
        read_body: BodyWanted | None = None,
        max_bytes: int | None = None,
    ) -> Response:
        """Send one request (redirects are never followed) and read the answer.

        ``json`` / ``form`` / ``content``: the body. ``auth``: HTTP Basic. ``truncate``: a
        body over the cap is cut and marked instead of refused. ``read_body(status,
        headers)``: whether to read the body at all (a redirect's is never used).
        ``max_bytes``: this answer's cap instead of the client's. Raises
        :class:`FetchError` for every failure to get a usable answer.
        """
        try:
            target = url if isinstance(url, URL) else URL(url)
            if params:
                target = target.extend_query(params)
        except (TypeError, ValueError) as exc:
            raise FetchError(f"invalid URL {url!r}: {exc}", kind=errors.INVALID_URL) from exc
        body, content_type = _encode_body(content, json, form)
        sent = dict(headers or {})
        if content_type is not None:
            sent.setdefault("Content-Type", content_type)
        if auth is not None:
            sent["Authorization"] = _basic_auth(*auth)
        cap = max_bytes or self.max_bytes
        try:
            async with asyncio.timeout(self.deadline):
                return await self._exchange(method, target, body, sent, truncate, read_body, cap)
        except TimeoutError as exc:  # the deadline: aiohttp's own timeouts are mapped inside
            message = f"no complete response within {self.deadline:g}s"
            raise FetchError(message, kind=errors.TIMEOUT) from exc

    async def _exchange(
        self,
        method: str,
        url: URL,
        body: bytes | None,
        headers: dict[str, str],
        truncate: bool,
        read_body: BodyWanted | None,
        max_bytes: int,
    ) -> Response:
        proxy, credentials = self._proxy_for(url)
        proxy_headers = None
        if credentials is not None:
            # The proxy reads them from the CONNECT request of an https URL, from the request
            # itself for plain http (where aiohttp does not send proxy_headers).
            if url.scheme == "https":
                proxy_headers = {"Proxy-Authorization": credentials}
            else:
                headers["Proxy-Authorization"] = credentials
        try:
            async with self._open().request(
                method,
                url,
                data=body,
                headers=headers or None,
                allow_redirects=False,
                proxy=proxy,
                proxy_headers=proxy_headers,
            ) as answer:
                response = Response(answer.status, decoded_headers(answer))
                if read_body is not None and not read_body(response.status, response.headers):
                    return response  # closing drops the unread body (and the connection)
                response.body, response.truncated = await _read_capped(answer.content, max_bytes)
        except Exception as exc:
            error = errors.from_transport(exc, https=url.scheme == "https")
            if error is None or error is exc:
                raise  # not an HTTP failure, or already ours (the guard's refusal)
            raise error from exc
        if response.truncated and not truncate:
            raise UnreadableBody(
                f"the answer is larger than {max_bytes} bytes", kind=errors.TOO_LARGE
            )
        return response
