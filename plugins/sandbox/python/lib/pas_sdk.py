"""The SDK of a Python worker step: `sdk.<name>(*args)` is the JavaScript `await sdk.<name>(...args)`.

Every call is an HTTP request to the host's SDK channel (127.0.0.1 inside the sandbox, forwarded to
a Unix socket the host serves): POST /v1/worker_sdk/<name> with the arguments as a JSON array. The
host acts in the run's account and workspace, whatever the script passes, and audits each call with
source WORKER. Names are the JavaScript SDK's (retrievePortfolio, listDatastores, runStressTest, ...);
snake_case spellings (retrieve_portfolio) reach the same functions.
"""

import http.client
import json
import os
import re

__all__ = ["sdk", "SdkError", "call"]

SDK_HOST = "127.0.0.1"
SDK_PORT = int(os.environ.get("PAS_SDK_PORT", "8765"))
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,99}$")


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
    if not NAME.match(name):
        raise SdkError("%r is not an SDK function name" % name)
    body = json.dumps(list(args), allow_nan=False)
    connection = http.client.HTTPConnection(SDK_HOST, SDK_PORT, timeout=None)
    try:
        connection.request(
            "POST", "/v1/worker_sdk/" + camel(name), body=body, headers={"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        data = response.read()
    except OSError as error:
        raise SdkError("The SDK channel is not reachable: %s" % error) from None
    finally:
        connection.close()
    try:
        payload = json.loads(data) if data else None
    except ValueError:
        payload = None
    if response.status == 200 and isinstance(payload, dict) and "result" in payload:
        return payload["result"]
    message = payload.get("message") if isinstance(payload, dict) else None
    code = payload.get("code") if isinstance(payload, dict) else None
    raise SdkError(message or "sdk.%s failed (HTTP %d)" % (name, response.status), response.status, code)


class Sdk:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args: call(name, *args)


sdk = Sdk()
