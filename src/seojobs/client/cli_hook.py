"""``seojobs wait --webhook-port N``: learn that a job ended from a webhook, not the next poll.

The CLI listens on 127.0.0.1:N (0: any free port), registers a temporary endpoint for
``job.completed`` and ``job.failed`` at ``http://127.0.0.1:N/<random path>`` (its secret is
shown to us once, at creation), and reads a job as soon as a delivery signed with that secret
names it. The polling rounds go on beneath on their usual schedule, so if nothing arrives (the
server cannot reach this machine's loopback, or its workers are slow to deliver) the wait ends
as a plain one would. The endpoint is deleted when the wait ends, however it ends.

The server must be allowed to deliver to loopback (it runs on this machine, with
``SEOJOBS_ALLOW_PRIVATE_NETWORKS``); when it refuses the endpoint the wait polls instead.
"""

from __future__ import annotations

import contextlib
import queue
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from seojobs.client import errors
from seojobs.client._base import Request
from seojobs.client.cli_common import Output, UsageProblem
from seojobs.client.sync import Client
from seojobs.client.webhooks import InvalidWebhook, verify

MAX_BODY = 1 << 20  # a delivery carries one job's status body: far below this
EVENTS = ["job.completed", "job.failed"]


class Receiver:
    """A loopback HTTP listener that accepts deliveries signed with ``secret`` at one path and
    hands over the ids of the jobs they name."""

    def __init__(self, port: int) -> None:
        self.path = "/" + secrets.token_urlsafe(16)
        self.secret: str | None = None  # known once the endpoint is registered
        self.arrived: queue.Queue[int] = queue.Queue()
        self.refused = 0  # deliveries that failed verification
        try:
            self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        except OSError as exc:
            message = f"--webhook-port: cannot listen on 127.0.0.1:{port} ({exc})"
            raise UsageProblem(message) from None
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"

    def accept(self, body: bytes, headers: dict[str, str]) -> int:
        """The status to answer a delivery with; a verified job event queues its job's id."""
        if self.secret is None:
            return 503  # not registered yet: the server retries
        try:
            event = verify(body, headers, self.secret)
        except InvalidWebhook:
            self.refused += 1
            return 400
        data = event.get("data")
        job_id = data.get("id") if isinstance(data, dict) else None
        if isinstance(job_id, int) and not isinstance(job_id, bool):
            self.arrived.put(job_id)
        return 204

    def wait(self, seconds: float) -> list[int]:
        """The ids delivered within ``seconds`` (empty if none): waits for the first one only."""
        try:
            found = [self.arrived.get(timeout=max(0.0, seconds))]
        except queue.Empty:
            return []
        with contextlib.suppress(queue.Empty):
            while True:
                found.append(self.arrived.get_nowait())
        return found

    @contextlib.contextmanager
    def running(self) -> Iterator[Receiver]:
        self.thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(timeout=5)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != receiver.path:
                self._answer(404)
                return
            try:
                length = int(self.headers.get("content-length") or "")
            except ValueError:
                self._answer(411)
                return
            if not 0 <= length <= MAX_BODY:
                self._answer(413)
                return
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            self._answer(receiver.accept(body, headers))

        def _answer(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return  # stderr is the CLI's: no access log

    return Handler


@contextlib.contextmanager
def webhook_receiver(client: Client, out: Output, port: int) -> Iterator[Receiver | None]:
    """A running receiver registered as a temporary endpoint of the key's user; None (the
    wait polls) when the server refuses the endpoint. The endpoint is deleted on exit."""
    receiver = Receiver(port)
    with receiver.running():
        body = {
            "url": receiver.url,
            "events": EVENTS,
            "description": f"seojobs wait on {receiver.url.rsplit('/', 1)[0]} (temporary)",
        }
        try:
            made = client.send(Request("POST", "/v1/webhooks", json=body)).json()["data"]
        except (errors.InvalidRequestError, errors.NotFoundError) as exc:
            out.warn(f"the server refuses a webhook to {receiver.url} ({exc}); polling instead")
            yield None
            return
        receiver.secret = str(made["secret"])
        out.info(f"waiting for webhooks on {receiver.url.rsplit('/', 1)[0]} (and polling)")
        try:
            yield receiver
        finally:
            try:
                client.send(Request("DELETE", f"/v1/webhooks/{made['id']}"))
            except errors.SeojobsError as exc:
                out.warn(f"could not delete the temporary webhook {made['id']}: {exc}")
            if receiver.refused:
                out.warn(f"{receiver.refused} delivery(ies) refused: not signed by our secret")
