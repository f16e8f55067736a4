"""Make Chromium trust the CAs of ``SEOJOBS_FETCH_CA_FILE`` as the fetcher does: an NSS user
database holding them as trust anchors for TLS servers, in a home folder of Chromium's own.

Chromium on Linux verifies a server's chain in full (name, dates, signatures) against its
root store and the roots of the NSS user database at ``$HOME/.pki/nssdb``; so the CAs are
added there, and Chromium is started with that ``HOME``. (Flags that skip verification,
``--ignore-certificate-errors`` or an SPKI list, would trust any chain that merely names a
listed key.) The database is written by NSS itself, ``libnss3`` (Chromium's own dependency),
through ``ctypes``, as ``certutil -A -t C,,`` writes it; NSS's state is per process, so that is
done by this file run by path in a process of its own::

    python -I nssdb.py FOLDER CA_FILE
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import ssl
import sys
import tempfile
from pathlib import Path

_END = "-----END CERTIFICATE-----"
SCRIPT = str(Path(__file__).resolve())


def _certificates(pem: str) -> list[bytes]:
    """The DER of each certificate in a PEM file."""
    blocks = [block for block in pem.split(_END) if "-----BEGIN CERTIFICATE-----" in block]
    return [ssl.PEM_cert_to_DER_cert(block.strip() + "\n" + _END + "\n") for block in blocks]


class _Trust(ctypes.Structure):
    _fields_ = [("ssl", ctypes.c_uint), ("email", ctypes.c_uint), ("sign", ctypes.c_uint)]


def write(folder: str, ca_file: str) -> int:
    """Create the NSS database in ``folder`` with every certificate of ``ca_file`` trusted
    as a CA for TLS servers; how many. Once per process (NSS's state is global)."""
    ders = _certificates(Path(ca_file).read_text("ascii"))
    nss = ctypes.CDLL("libnss3.so")
    smime = ctypes.CDLL("libsmime3.so")
    nss.NSS_Initialize.argtypes = [ctypes.c_char_p] * 4 + [ctypes.c_uint32]
    nss.PK11_GetInternalKeySlot.restype = ctypes.c_void_p
    nss.PK11_NeedUserInit.argtypes = [ctypes.c_void_p]
    nss.PK11_InitPin.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    smime.CERT_DecodeCertFromPackage.restype = ctypes.c_void_p
    smime.CERT_DecodeCertFromPackage.argtypes = [ctypes.c_char_p, ctypes.c_int]
    nss.PK11_ImportCert.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulong]
    nss.PK11_ImportCert.argtypes += [ctypes.c_char_p, ctypes.c_int]
    nss.CERT_GetDefaultCertDB.restype = ctypes.c_void_p
    nss.CERT_DecodeTrustString.argtypes = [ctypes.POINTER(_Trust), ctypes.c_char_p]
    nss.CERT_ChangeCertTrust.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_Trust)]
    nss.CERT_DestroyCertificate.argtypes = [ctypes.c_void_p]
    nss.PK11_FreeSlot.argtypes = [ctypes.c_void_p]
    # Read-write (flags 0), the SQLite format Chromium opens ("sql:").
    if nss.NSS_Initialize(f"sql:{folder}".encode(), b"", b"", b"secmod.db", 0) != 0:
        raise RuntimeError(f"NSS could not create its database in {folder}")
    slot = nss.PK11_GetInternalKeySlot()
    try:
        if nss.PK11_NeedUserInit(slot) and nss.PK11_InitPin(slot, None, b"") != 0:
            raise RuntimeError("NSS could not set the database's (empty) password")
        trust = _Trust()
        if nss.CERT_DecodeTrustString(ctypes.byref(trust), b"C,,") != 0:
            raise RuntimeError("NSS did not read the trust C,,")
        for number, der in enumerate(ders):
            cert = smime.CERT_DecodeCertFromPackage(der, len(der))
            if not cert:
                raise RuntimeError(f"NSS did not read certificate {number + 1} of {ca_file}")
            try:
                name = f"seojobs-ca-{number + 1}".encode()
                if nss.PK11_ImportCert(slot, cert, 0, name, 0) != 0:
                    raise RuntimeError(f"NSS did not store certificate {number + 1}")
                db = nss.CERT_GetDefaultCertDB()
                if nss.CERT_ChangeCertTrust(db, cert, ctypes.byref(trust)) != 0:
                    raise RuntimeError(f"NSS did not trust certificate {number + 1}")
            finally:
                nss.CERT_DestroyCertificate(cert)
    finally:
        nss.PK11_FreeSlot(slot)
        nss.NSS_Shutdown()
    return len(ders)


async def trusting_home(ca_file: str) -> tempfile.TemporaryDirectory[str]:
    """A home folder whose NSS database trusts ``ca_file``'s CAs (the caller removes it)."""
    home = tempfile.TemporaryDirectory(prefix="seojobs-ca-home-")
    folder = os.path.join(home.name, ".pki", "nssdb")
    await asyncio.to_thread(os.makedirs, folder)
    made = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        SCRIPT,
        folder,
        ca_file,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await made.communicate()
    if made.returncode != 0:
        home.cleanup()
        why = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"cannot make Chromium trust {ca_file}: {why[0]}")
    return home


if __name__ == "__main__":
    write(sys.argv[1], sys.argv[2])
