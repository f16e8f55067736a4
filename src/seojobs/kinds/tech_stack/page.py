"""What fingerprints are matched against, read from one fetched page.

Everything comes from the one response (no browser): the final URL, the response headers,
the cookies it sets, and from the HTML its meta tags, script URLs and inline scripts. Texts
are bounded (``max_chars``) so a huge page cannot make matching arbitrarily long.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

from seojobs.fetch import FetchResult

MAX_SCRIPTS = 200
MAX_VALUE_CHARS = 4_000  # one header, cookie, meta content or script URL


@dataclass
class PageFacts:
    url: str
    headers: list[tuple[str, str]] = field(default_factory=list)  # (lowercased name, value)
    cookies: list[tuple[str, str]] = field(default_factory=list)  # (lowercased name, value)
    meta: list[tuple[str, str]] = field(default_factory=list)  # (lowercased name, content)
    script_src: list[str] = field(default_factory=list)
    scripts: str = ""  # inline scripts, joined
    html: str = ""
    # Casefolded copies, so a pattern's required literal is looked for before its regex.
    scripts_folded: str = ""
    html_folded: str = ""
    script_src_folded: str = ""  # every script URL: one without the literal has none


class _Reader(HTMLParser):
    def __init__(self, max_chars: int) -> None:
        super().__init__(convert_charrefs=True)
        self.meta: list[tuple[str, str]] = []
        self.script_src: list[str] = []
        self.inline: list[str] = []
        self._in_script = False
        self._room = max_chars

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name.lower(): value or "" for name, value in reversed(attrs)}
        if tag == "meta":
            name = found.get("name") or found.get("property") or found.get("http-equiv")
            if name and "content" in found:
                self.meta.append((name.lower(), found["content"][:MAX_VALUE_CHARS]))
        elif tag == "script":
            src = found.get("src", "").strip()
            if src and len(self.script_src) < MAX_SCRIPTS:
                self.script_src.append(src[:MAX_VALUE_CHARS])
            self._in_script = not src

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and self._room > 0:
            self.inline.append(data[: self._room])
            self._room -= len(data)


def _cookies(set_cookie: list[str]) -> list[tuple[str, str]]:
    found = []
    for header in set_cookie:
        pair = header.split(";", 1)[0]
        name, sep, value = pair.partition("=")
        if sep and name.strip():
            found.append((name.strip().lower(), value.strip()[:MAX_VALUE_CHARS]))
    return found


def bounded(html: str, max_chars: int) -> str:
    """What ``html`` patterns search: the whole page, or its start and its end (where the
    head's markup and a footer's "powered by" are), ``max_chars`` in all. Searching a long
    page costs up to a millisecond per 100 KB per pattern, and a database holds thousands."""
    if len(html) <= max_chars:
        return html
    tail = max_chars // 4
    return html[: max_chars - tail] + "\n" + html[-tail:]


def read_page(fetched: FetchResult, max_chars: int) -> PageFacts:
    headers = [(k.lower(), v[:MAX_VALUE_CHARS]) for k, v in fetched.headers.items()]
    facts = PageFacts(
        url=fetched.final_url,
        headers=headers,
        cookies=_cookies(fetched.header_list("set-cookie")),
    )
    if fetched.is_html or (fetched.content_type is None and fetched.body):
        text = fetched.text  # at most fetch_max_bytes: read whole for meta tags and scripts
        reader = _Reader(max_chars)
        reader.feed(text)
        reader.close()
        facts.html = bounded(text, max_chars)
        facts.meta = reader.meta
        facts.script_src = reader.script_src
        facts.scripts = "\n".join(reader.inline)
        facts.html_folded = facts.html.casefold()
        facts.scripts_folded = facts.scripts.casefold()
        facts.script_src_folded = "\n".join(facts.script_src).casefold()
    return facts
