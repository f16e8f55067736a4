"""Client CLI pure parts: reading URLs (arguments, files, stdin), errors to exit codes."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pytest

from seojobs.client import errors
from seojobs.client.cli_common import (
    Exit,
    UsageProblem,
    describe,
    never_sent,
    read_urls,
    url_problem,
)


class Piped(io.StringIO):
    def isatty(self) -> bool:
        return False


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_arguments_win_and_stdin_is_not_read() -> None:
    stdin = Piped("https://ignored.example/\n")
    assert read_urls(["https://a.example/"], None, stdin) == ["https://a.example/"]
    assert stdin.tell() == 0


def test_piped_stdin_when_there_are_no_arguments() -> None:
    stdin = Piped("https://a.example/\n\n# note\nhttps://b.example/x?y=1\n")
    assert read_urls([], None, stdin) == ["https://a.example/", "https://b.example/x?y=1"]


def test_dash_reads_stdin_and_arguments_come_first() -> None:
    stdin = Piped("https://b.example/\n")
    urls = read_urls(["https://a.example/"], "-", stdin)
    assert urls == ["https://a.example/", "https://b.example/"]


def test_a_terminal_on_stdin_without_urls_is_a_usage_error() -> None:
    with pytest.raises(UsageProblem, match="no URLs"):
        read_urls([], None, Terminal())


def test_file_with_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_bytes(b"\xef\xbb\xbfhttps://a.example/\r\nhttps://b.example/\r\n")
    assert read_urls([], str(path), Terminal()) == ["https://a.example/", "https://b.example/"]


def test_every_malformed_line_is_named_by_number(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_text("https://a.example/\nmailto:x@y.example\n\nhttps://\nhttps://a b/\n")
    with pytest.raises(UsageProblem) as caught:
        read_urls([], str(path), Terminal())
    message = str(caught.value)
    assert f"{path}:line 2: not an http(s) URL" in message
    assert f"{path}:line 4: no host name" in message
    assert f"{path}:line 5: one URL per line" in message
    assert "line 1:" not in message and "line 3:" not in message


def test_bad_arguments_are_named_by_position() -> None:
    with pytest.raises(UsageProblem, match="argument 2: not an http"):
        read_urls(["https://a.example/", "a.example"], None, Terminal())


def test_a_long_list_of_bad_lines_is_cut_short() -> None:
    stdin = Piped("".join(f"bad{i}\n" for i in range(50)))
    with pytest.raises(UsageProblem) as caught:
        read_urls([], "-", stdin)
    assert "stdin:line 20:" in str(caught.value) and "stdin:line 21:" not in str(caught.value)
    assert "and 30 more" in str(caught.value)


def test_unreadable_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageProblem, match="cannot read"):
        read_urls([], str(tmp_path / "missing.txt"), Terminal())
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(UsageProblem, match="not UTF-8"):
        read_urls([], str(binary), Terminal())


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("https://a.example/p?q=1#f", None),
        ("HTTP://A.EXAMPLE", None),
        ("http://127.0.0.1:8080/x", None),
        ("https://a.example:99999/", "not a valid URL"),
        ("//a.example/", "not an http(s) URL"),
        ("https:///path", "no host name"),
    ],
)
def test_url_problem(text: str, problem: str | None) -> None:
    assert url_problem(text) == problem


def _api(cls: type[errors.APIError], status: int, **kw: object) -> errors.APIError:
    return cls(status, "Title", "detail", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("error", "code", "words"),
    [
        (errors.TransportError("GET /x: refused"), Exit.UNAVAILABLE, "cannot reach"),
        (_api(errors.RateLimitedError, 429, retry_after=12.0), Exit.UNAVAILABLE, "after 12s"),
        (_api(errors.ServerError, 503), Exit.UNAVAILABLE, "try again later"),
        (_api(errors.ConflictError, 409), Exit.UNAVAILABLE, "try again later"),
        (_api(errors.AuthenticationError, 401), Exit.USAGE, "SEOJOBS_API_KEY"),
        (_api(errors.APIError, 403), Exit.USAGE, "API key"),
        (_api(errors.InvalidRequestError, 422), Exit.USAGE, "refused the request"),
        (_api(errors.NotFoundError, 404), Exit.USAGE, "refused the request"),
        (_api(errors.APIError, 418), Exit.FAILED, "418"),
    ],
)
def test_errors_map_to_documented_exit_codes(
    error: errors.SeojobsError, code: Exit, words: str
) -> None:
    message, got = describe(error, "http://127.0.0.1:1")
    assert got == code and words in message


def test_field_errors_are_listed() -> None:
    error = errors.InvalidRequestError(
        422, "Invalid", errors=[{"field": "urls[0]", "message": "not http"}]
    )
    message, _ = describe(error, "http://x")
    assert "urls[0]: not http" in message


def test_never_sent_only_when_certain() -> None:
    refused = errors.TransportError("POST: refused")
    refused.__cause__ = httpx.ConnectError("refused")
    lost = errors.TransportError("POST: read timeout")
    lost.__cause__ = httpx.ReadTimeout("timeout")
    assert never_sent(refused) is True
    assert never_sent(lost) is False  # the server may have made the job
    assert never_sent(_api(errors.ServerError, 502)) is False
    assert never_sent(_api(errors.InvalidRequestError, 422)) is True
    assert never_sent(_api(errors.RateLimitedError, 429)) is True
