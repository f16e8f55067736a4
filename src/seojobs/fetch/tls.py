"""A TLS handshake with a user-named host, through the same SSRF guard as page fetches.

What a domain lookup reads of a host's certificate: the host is resolved and checked by an
:class:`~seojobs.fetch.guard.AddressGuard` (refused: nothing is sent), then each allowed
address is tried in turn with the name as SNI. A verifying handshake comes first; when the
chain or name does not verify, a second, non-verifying one still reads the certificate, so an
expired or self-signed certificate is reported rather than hidden behind the error.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from dataclasses import dataclass

from seojobs.fetch.errors import CONNECT_ERROR, TIMEOUT, TLS_ERROR, FetchError
from seojobs.fetch.guard import AddressGuard, IPAddress


@dataclass(frozen=True)
class PeerTLS:
    """One completed handshake: where, how, and the leaf certificate (DER)."""

    address: str
    port: int
    protocol: str | None
    cipher: str | None
    certificate: bytes | None
    verified: bool
    verify_error: str | None


@functools.lru_cache(maxsize=8)
def _contexts(cafile: str | None) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """The verifying and the lenient context, made once per CA file and process, as the
    fetcher's (``seojobs.fetch.client._trusting``): each loads the system's CAs, some 30 ms
    of CPU, and every lookup made both. Shared by every handshake, as an ``SSLContext`` may
    be."""
    verifying = ssl.create_default_context(cafile=cafile)
    if cafile:  # extra trust anchors besides the system's (a private CA)
        verifying.load_default_certs()
    lenient = ssl.create_default_context()
    lenient.check_hostname = False
    lenient.verify_mode = ssl.CERT_NONE
    return verifying, lenient


async def _handshake(
    address: IPAddress, host: str, port: int, context: ssl.SSLContext, seconds: float
) -> PeerTLS:
    async with asyncio.timeout(seconds):
        _reader, writer = await asyncio.open_connection(
            str(address), port, ssl=context, server_hostname=host, ssl_handshake_timeout=seconds
        )
    try:
        tls = writer.get_extra_info("ssl_object")
        cipher = tls.cipher() if tls is not None else None
        return PeerTLS(
            address=str(address),
            port=port,
            protocol=tls.version() if tls is not None else None,
            cipher=cipher[0] if cipher else None,
            certificate=tls.getpeercert(binary_form=True) if tls is not None else None,
            verified=context.verify_mode == ssl.CERT_REQUIRED,
            verify_error=None,
        )
    finally:
        writer.close()
        try:
            async with asyncio.timeout(seconds):
                await writer.wait_closed()
        except (OSError, TimeoutError):
            pass  # the peer went first: what was read is read


async def peer_tls(
    host: str,
    port: int,
    *,
    guard: AddressGuard,
    seconds: float,
    cafile: str | None = None,
) -> PeerTLS:
    """Handshake with ``host`` on ``port`` (``seconds`` at most per attempt); raises
    :class:`FetchError` (``SSRFRefused`` when the guard refuses its addresses) when no address
    completes a handshake."""
    addresses = await guard.resolve(host)  # refused here: nothing was sent
    verifying, lenient = _contexts(cafile)
    last: FetchError | None = None
    for address in addresses:
        try:
            return await _handshake(address, host, port, verifying, seconds)
        except ssl.SSLCertVerificationError as exc:
            why = exc.verify_message or str(exc)
            try:
                found = await _handshake(address, host, port, lenient, seconds)
            except (OSError, TimeoutError) as again:
                last = FetchError(f"{host} ({address}): {again}", kind=TLS_ERROR)
                continue
            return PeerTLS(
                found.address, port, found.protocol, found.cipher, found.certificate, False, why
            )
        except ssl.SSLError as exc:
            message = f"TLS handshake with {host} ({address}) failed: {exc}"
            last = FetchError(message, kind=TLS_ERROR)
        except TimeoutError:
            message = f"no TLS handshake with {host} ({address}) within {seconds:g}s"
            last = FetchError(message, kind=TIMEOUT)
        except OSError as exc:
            message = f"cannot connect to {host} ({address}) port {port}: {exc}"
            last = FetchError(message, kind=CONNECT_ERROR)
    assert last is not None  # the guard returns at least one address
    raise last
