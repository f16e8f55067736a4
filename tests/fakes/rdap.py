"""A fake RDAP service: IANA's bootstrap file (RFC 9224), a registry and a registrar server
answering RFC 9083 domain objects shaped like real ones (Verisign's registry answer with its
``related`` link to the registrar; the registrar's fuller answer), and RFC 9083 §6 errors.

``registry_down``: the registry answers 503; ``registrar_down``: the registrar does.
``registry_body``: the registry answers these raw bytes instead (a hostile registry).
``hits`` counts requests per path; ``accepts`` records each request's Accept header.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

RDAP_JSON = "application/rdap+json"


def _error(status: int, title: str) -> JSONResponse:
    body = {"rdapConformance": ["rdap_level_0"], "errorCode": status, "title": title}
    return JSONResponse(body, status_code=status, media_type=RDAP_JSON)


def registry_object(name: str, base: str) -> dict[str, Any]:
    upper = name.upper()
    return {
        "objectClassName": "domain",
        "handle": "2336799_DOMAIN_COM-VRSN",
        "ldhName": upper,
        "links": [
            {
                "value": f"{base}/registry/domain/{upper}",
                "rel": "self",
                "href": f"{base}/registry/domain/{upper}",
                "type": RDAP_JSON,
            },
            {
                "value": f"{base}/registrar/domain/{upper}",
                "rel": "related",
                "href": f"{base}/registrar/domain/{upper}",
                "type": RDAP_JSON,
            },
        ],
        "status": ["client delete prohibited", "client transfer prohibited"],
        "entities": [
            {
                "objectClassName": "entity",
                "handle": "376",
                "roles": ["registrar"],
                "publicIds": [{"type": "IANA Registrar ID", "identifier": "376"}],
                "vcardArray": [
                    "vcard",
                    [
                        ["version", {}, "text", "4.0"],
                        ["fn", {}, "text", "RESERVED-Internet Assigned Numbers Authority"],
                    ],
                ],
                "entities": [
                    {
                        "objectClassName": "entity",
                        "roles": ["abuse"],
                        "vcardArray": [
                            "vcard",
                            [
                                ["version", {}, "text", "4.0"],
                                ["fn", {}, "text", ""],
                                ["email", {}, "text", "abuse@iana.example"],
                            ],
                        ],
                    }
                ],
            }
        ],
        "events": [
            {"eventAction": "registration", "eventDate": "1995-08-14T04:00:00Z"},
            {"eventAction": "expiration", "eventDate": "2026-08-13T04:00:00Z"},
            {"eventAction": "last changed", "eventDate": "2025-08-14T07:01:39Z"},
            {"eventAction": "last update of RDAP database", "eventDate": "2026-01-05T11:12:13Z"},
        ],
        "secureDNS": {"delegationSigned": True},
        "nameservers": [
            {"objectClassName": "nameserver", "ldhName": "A.IANA-SERVERS.NET"},
            {"objectClassName": "nameserver", "ldhName": "B.IANA-SERVERS.NET"},
        ],
        "rdapConformance": ["rdap_level_0", "icann_rdap_technical_implementation_guide_1"],
        "notices": [{"title": "Terms of Use", "description": ["Service subject to terms."]}],
    }


def registrar_object(name: str) -> dict[str, Any]:
    return {
        "objectClassName": "domain",
        "ldhName": name.lower(),
        "status": ["client transfer prohibited"],
        "entities": [{"objectClassName": "entity", "roles": ["registrant"], "handle": "REDACTED"}],
        "events": [{"eventAction": "registration", "eventDate": "1995-08-14T04:00:00Z"}],
        "nameservers": [],
        "rdapConformance": ["rdap_level_0"],
    }


class FakeRdap:
    def __init__(self, domains: set[str]) -> None:
        self.domains = {d.lower() for d in domains}
        self.base = ""  # set once served
        self.registry_down = False
        self.registrar_down = False
        self.registry_body: bytes | None = None
        self.hits: Counter[str] = Counter()
        self.accepts: list[str] = []
        self._lock = threading.Lock()

    def _seen(self, request: Request) -> None:
        with self._lock:
            self.hits[request.url.path] += 1
            self.accepts.append(request.headers.get("accept", ""))

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/bootstrap/dns.json")
        def bootstrap(request: Request) -> JSONResponse:
            self._seen(request)
            return JSONResponse(
                {
                    "description": "RDAP bootstrap file for Domain Name System registrations",
                    "publication": "2026-11-20T18:00:01Z",
                    "services": [
                        [["test", "example"], [f"{self.base}/registry/"]],
                        [["org"], ["https://rdap.org.invalid/"]],
                    ],
                    "version": "1.0",
                }
            )

        @app.get("/registry/domain/{name}")
        def registry(name: str, request: Request) -> JSONResponse:
            self._seen(request)
            if self.registry_down:
                return _error(503, "Service Unavailable")
            if name.lower() not in self.domains:
                return _error(404, "Not Found")
            if self.registry_body is not None:
                return Response(self.registry_body, media_type=RDAP_JSON)
            return JSONResponse(registry_object(name, self.base), media_type=RDAP_JSON)

        @app.get("/registrar/domain/{name}")
        def registrar(name: str, request: Request) -> JSONResponse:
            self._seen(request)
            if self.registrar_down:
                return _error(503, "Service Unavailable")
            return JSONResponse(registrar_object(name), media_type=RDAP_JSON)

        return app
