"""The SDK of a Python worker step: `sdk.<name>(*args)` is the JavaScript `await sdk.<name>(...args)`.

Every call is an HTTP request on the host's SDK channel, a Unix socket bound into the sandbox at
/run/pas/sdk.sock (also forwarded to 127.0.0.1:$PAS_SDK_PORT for any HTTP client):
POST /v1/worker_sdk/<name> with the arguments as a JSON array. The
host acts in the run's account and workspace, whatever the script passes, and audits each call with
source WORKER. Names are the JavaScript SDK's (retrievePortfolio, listDatastores, runStressTest, ...);
snake_case spellings (retrieve_portfolio) reach the same functions.
"""

import _socket
import json
import os

__all__ = ["sdk", "SdkError", "call", "request", "send_email", "secret"]

SDK_SOCKET = os.environ.get("PAS_SDK_SOCKET", "/run/pas/sdk.sock")


class SdkError(Exception):
    """The host refused or failed a call: `status` is its HTTP status, `code` its error code."""

    def __init__(self, message, status=None, code=None):
        super().__init__(message)
        self.status = status
        self.code = code


def camel(name):
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def call(name, *args):
    if not (name.isascii() and name[:1].isalpha() and name.replace("_", "").isalnum() and len(name) <= 100):
        raise SdkError("%r is not an SDK function name" % name)
    status, data = post("/v1/worker_sdk/" + camel(name), json.dumps(list(args), allow_nan=False).encode())
    try:
        payload = json.loads(data) if data else None
    except ValueError:
        payload = None
    if status == 200 and isinstance(payload, dict) and "result" in payload:
        return payload["result"]
    message = payload.get("message") if isinstance(payload, dict) else None
    code = payload.get("code") if isinstance(payload, dict) else None
    raise SdkError(message or "sdk.%s failed (HTTP %d)" % (name, status), status, code)


def post(path, body):
    """One HTTP/1.1 POST on the channel (Connection: close), without http.client's start-up cost."""
    head = (
        "POST %s HTTP/1.1\r\nHost: sdk\r\nContent-Type: application/json\r\n"
        "Content-Length: %d\r\nConnection: close\r\n\r\n" % (path, len(body))
    ).encode()
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        connection.connect(SDK_SOCKET)
        connection.sendall(head + body)
        chunks = []
        while True:
            chunk = connection.recv(262144)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as error:
        raise SdkError("The SDK channel is not reachable: %s" % error) from None
    finally:
        connection.close()
    response = b"".join(chunks)
    header, _, data = response.partition(b"\r\n\r\n")
    try:
        status = int(header.split(b" ", 2)[1])
    except (IndexError, ValueError):
        raise SdkError("The SDK channel answered something that is not HTTP") from None
    if b"transfer-encoding: chunked" in header.lower():
        data = unchunk(data)
    return status, data


def unchunk(data):
    out = []
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        data = rest[size + 2 :]
    return b"".join(out)


class Sdk:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args: call(name, *args)


sdk = Sdk()


def request(integration, options=None, **fields):
    """One HTTP call through an HTTP integration (by id or name): the JavaScript `sdk.request`.

    `options` (or keyword arguments): method, path (joined under the integration's base_url), query,
    headers, body (a dict or list is sent as JSON), response ('json', 'text' or 'base64'). The
    integration adds its own headers and credentials; the script never sees them. Answers
    {"status", "headers", "body"} whatever the status; a refused or failed call raises SdkError.
    """
    merged = dict(options or {})
    merged.update(fields)
    return call("request", integration, merged)


def send_email(integration, message=None, **fields):
    """One e-mail through an SMTP integration: to, cc, subject, text, html, attachments (file ids).

    Answers {"message_id", "accepted", "rejected"}.
    """
    merged = dict(message or {})
    merged.update(fields)
    return call("sendEmail", integration, merged)


def secret(name):
    """A secret's value by name, in the run's workspace. It is kept out of everything the step
    leaves behind: logs, result and errors show [secret:NAME] in its place."""
    return call("secret", name)
