"""Runs one worker script inside the Python sandbox (see ../python-sandbox.ts).

The host starts it as `python -I /sandbox/bootstrap.py <settings json>` in a bubblewrap sandbox: the
arguments object arrives as JSON on stdin, the reply leaves on fd 3 as `<kind> <cpu_ms>\n<payload>`
(kind: ok, script, memory, invalid_output), and stdout and stderr are the step's log (info and error).
It also forwards 127.0.0.1:<port> to the host's SDK socket, so any HTTP client reaches the SDK.
"""

# Only cheap imports here (the step's start-up time is the sandbox's overhead): the C modules
# _socket and _thread instead of socket and threading; traceback only when a script fails.
import _socket
import _thread
import builtins
import errno
import json
import os
import resource
import sys

SETTINGS = json.loads(sys.argv[1])
# The process limit, set here inside the sandbox's own user namespace, where the kernel counts only
# this sandbox's processes and threads against it (per-namespace counts, Linux 5.14 and later). Set
# outside, it would count every process of the worker's uid: in a container whose worker runs as an
# ordinary user beside the API's processes, bubblewrap could not even start.
resource.setrlimit(resource.RLIMIT_NPROC, (SETTINGS["maxProcesses"], SETTINGS["maxProcesses"]))
SCRIPT_FILENAME = "worker.py"
REPLY_FD = 3
MAIN_PID = os.getpid()


def cpu_ms():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round((own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime) * 1000)


def reply(kind, payload):
    if os.getpid() != MAIN_PID:
        # A process the script forked: only the step's own process answers.
        os._exit(1)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    data = ("%s %d\n" % (kind, cpu_ms())).encode() + payload.encode("utf-8", "replace")
    view = memoryview(data)
    while view:
        written = os.write(REPLY_FD, view)
        view = view[written:]
    os.close(REPLY_FD)
    os._exit(0)


class LogWriter:
    """sys.stdout (level I) and sys.stderr (level E) as whole lines on fd 1, in the order written."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, level):
        self.level = level
        self.pending = ""

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        self.pending += text
        if "\n" in self.pending:
            *lines, self.pending = self.pending.split("\n")
            self.emit(lines)
        return len(text)

    def emit(self, lines):
        data = "".join("\x1e%s%s\n" % (self.level, line) for line in lines).encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]

    def flush(self):
        if self.pending:
            lines, self.pending = [self.pending], ""
            self.emit(lines)

    def isatty(self):
        return False

    def writable(self):
        return True

    def fileno(self):
        return 1 if self.level == "I" else 2


def pump(source, target):
    try:
        while True:
            chunk = source.recv(65536)
            if not chunk:
                break
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(_socket.SHUT_RDWR)
            except OSError:
                pass


def forward(listener, path):
    while True:
        try:
            fd, _ = listener._accept()
        except OSError:
            return
        client = _socket.socket(fileno=fd)
        try:
            upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            upstream.connect(path)
        except OSError:
            client.close()
            continue
        _thread.start_new_thread(pump, (client, upstream))
        _thread.start_new_thread(pump, (upstream, client))


def start_forwarder():
    """127.0.0.1:<sdkPort> → the host's SDK socket, for any HTTP client (urllib, requests, everysk)."""
    path = SETTINGS.get("sdkSocket")
    if not path:
        return
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", SETTINGS["sdkPort"]))
    listener.listen(16)
    _thread.start_new_thread(forward, (listener, path))


class LazySdk:
    """`sdk`: loads the SDK module on first use (a step that never calls it does not pay for it)."""

    def __getattr__(self, name):
        import pas_sdk

        return getattr(pas_sdk.sdk, name)


def location(error):
    import traceback

    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == SCRIPT_FILENAME]
    return " (%s:%d)" % (SCRIPT_FILENAME, frames[-1].lineno) if frames else ""


LIMIT_ERRNOS = {
    errno.EAGAIN: "the sandbox allows at most %d processes" % SETTINGS["maxProcesses"],
    errno.EMFILE: "the sandbox allows at most %d open files" % SETTINGS["maxOpenFiles"],
    errno.EFBIG: "the sandbox allows files of at most %d bytes" % SETTINGS["maxFileBytes"],
    errno.ENOSPC: "the sandbox's temporary folder holds at most %d bytes" % SETTINGS["tmpBytes"],
}


def describe(error):
    text = "%s: %s" % (type(error).__name__, error) if str(error) else type(error).__name__
    if isinstance(error, OSError) and error.errno in LIMIT_ERRNOS:
        text += " (limit: %s)" % LIMIT_ERRNOS[error.errno]
    return text + location(error)


def finite(value):
    """JSON has no NaN or infinity: they become null, as JavaScript's JSON.stringify makes them."""
    if isinstance(value, float):
        return value if value - value == 0 else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def plain(value):
    """numpy arrays and scalars, pandas objects: their plain Python equivalents."""
    if hasattr(value, "to_dict") and callable(value.to_dict):
        try:
            return value.to_dict(orient="records")
        except TypeError:
            return value.to_dict()
    if hasattr(value, "tolist") and callable(value.tolist):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return list(value)
    raise TypeError("%s is not JSON-serialisable" % type(value).__name__)


def encode(result):
    try:
        return json.dumps(result, allow_nan=False, default=plain, separators=(",", ":"))
    except ValueError:
        return json.dumps(finite(json.loads(json.dumps(result, default=plain))), allow_nan=False)


def main():
    args = json.loads(sys.stdin.buffer.read() or b"null")
    os.close(0)
    sys.stdout = sys.__stdout__ = LogWriter("I")
    sys.stderr = sys.__stderr__ = LogWriter("E")
    start_forwarder()
    sys.path.insert(0, "/sandbox/lib")
    builtins.sdk = LazySdk()
    with open("/sandbox/script.py", encoding="utf-8") as handle:
        source = handle.read()
    module = {"__name__": "worker", "__file__": SCRIPT_FILENAME, "__builtins__": builtins}
    try:
        code = compile(source, SCRIPT_FILENAME, "exec")
    except SyntaxError as error:
        reply("script", "SyntaxError: %s (%s:%s)" % (error.msg, SCRIPT_FILENAME, error.lineno))
    try:
        exec(code, module)
        entry = module.get(SETTINGS["entryPoint"])
        if not callable(entry):
            reply("script", "The script defines no function named %s" % SETTINGS["entryPoint"])
        result = entry(args)
        if hasattr(result, "__await__"):
            import asyncio

            async def wait():
                return await result

            result = asyncio.run(wait())
    except MemoryError:
        reply("memory", "Script exceeded the memory limit of %d MB" % SETTINGS["memoryLimitMb"])
    except SystemExit as error:
        reply("script", "The script called exit(%s)%s" % (error.code, location(error)))
    except BaseException as error:
        reply("script", describe(error))
    try:
        text = encode(result)
    except MemoryError:
        reply("memory", "Script exceeded the memory limit of %d MB" % SETTINGS["memoryLimitMb"])
    except Exception as error:
        reply("invalid_output", "The result is not JSON-serialisable: %s" % error)
    if len(text.encode("utf-8")) > SETTINGS["maxOutputBytes"]:
        reply("invalid_output", "The result JSON exceeds the limit of %d bytes" % SETTINGS["maxOutputBytes"])
    reply("ok", text)


main()
