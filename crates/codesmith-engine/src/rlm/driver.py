# CodeSmith RLM driver: a resident Python REPL the harness talks to over JSON lines.
#
# Protocol (one JSON object per line; the harness writes to our stdin, we answer on stdout):
#   harness -> driver  {"op": "load", "name": N, "meta": M,       bind an input variable
#                       "parts": [[K|null, B], ...]}              to the raw UTF-8 bytes that
#                                                                 follow the line: one part
#                                                                 with K null is a str, else a
#                                                                 dict K -> str (B bytes each)
#                      {"op": "exec", "code": C, "round": R}      run round R
#                      {"op": "answers", "answers": [...]}        child-call results
#                      {"op": "answers", "error": E}              child calls refused
#   driver -> harness  {"op": "ready"}                            after start and each load
#                      {"op": "llm", "prompts": [...]}            child calls (waits for answers)
#                      {"op": "rlm", "prompt": P, "context": C}   a recursive child (waits)
#                      {"op": "done", "round": R, "output": O,   end of round R
#                       "output_chars": K, "final": F|null, "error": E|null}
# The protocol uses private duplicates of fds 0 and 1; fd 0 then reads /dev/null and fd 1
# goes to stderr, so nothing the round's code prints or writes can reach the pipe by accident.
import builtins as _builtins
import io
import json
import os
import re
import sys
import threading
import traceback

_in = os.fdopen(os.dup(0), "rb")
_out = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
os.dup2(2, 1)
sys.stdin = open(os.devnull, "r")

MAX_CAPTURE = 8 * 1024 * 1024  # characters of printed output kept per round
MAX_PEEK = 20000
MAX_GREP = 1000
GREP_LINE = 300
MAX_BATCH = int(os.environ.get("CODESMITH_RLM_MAX_BATCH", "16"))


# One exchange at a time holds this lock: a request and its answer, a message that wants
# none, the main loop's wait for the next op. Threads of the round's code calling llm() at
# once neither mix their lines nor take each other's answers, and a thread left running
# after its round asks only once the next round has begun.
_pipe = threading.Lock()


def _write(msg):
    _out.write(json.dumps(msg) + "\n")
    _out.flush()


def _send(msg):
    with _pipe:
        _write(msg)


def _ask(msg):
    """Sends a request and reads its answer, as one exchange."""
    with _pipe:
        _write(msg)
        return _recv()


def _recv():
    line = _in.readline()
    if not line:
        os._exit(0)
    return json.loads(line)


def _read_exact(n):
    data = _in.read(n)
    if data is None or len(data) != n:
        os._exit(0)
    return data


def _load_value(parts):
    """The value of a load: its parts' raw bytes, sent after the line (not inside the JSON,
    where escaping could make a binary input six times longer)."""
    if len(parts) == 1 and parts[0][0] is None:
        return _read_exact(parts[0][1]).decode("utf-8")
    return {key: _read_exact(size).decode("utf-8") for key, size in parts}


class _Capture(io.TextIOBase):
    def __init__(self):
        self.parts = []
        self.kept = 0
        self.total = 0

    def writable(self):
        return True

    def write(self, s):
        s = str(s)
        self.total += len(s)
        room = MAX_CAPTURE - self.kept
        if room > 0:
            piece = s[:room]
            self.parts.append(piece)
            self.kept += len(piece)
        return len(s)

    def text(self):
        return "".join(self.parts)


def _text(var):
    if isinstance(var, str):
        return var
    if isinstance(var, (bytes, bytearray)):
        return bytes(var).decode("utf-8", "replace")
    raise TypeError("expected text (str), got %s" % type(var).__name__)


def peek(var, start=0, length=1000):
    """Characters start..start+length of var (at most 20000)."""
    text = _text(var)
    length = max(0, min(int(length), MAX_PEEK))
    start = max(0, int(start))
    return text[start:start + length]


def grep(var, pattern, max=100):
    """(line_number, line) pairs of var matching the regex pattern; at most `max` (<= 1000),
    lines cut at 300 characters."""
    text = _text(var)
    rx = re.compile(pattern)
    limit = _builtins.max(0, min(int(max), MAX_GREP))
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        if rx.search(line):
            hits.append((number, line[:GREP_LINE]))
            if len(hits) >= limit:
                break
    return hits


def chunks(var, size):
    """Consecutive slices of var of `size` characters (the last may be shorter)."""
    text = _text(var)
    size = int(size)
    if size < 1:
        raise ValueError("chunks: size must be at least 1")
    return [text[i:i + size] for i in range(0, len(text), size)]


def llm_batch(prompts):
    """Answers of child model calls, one per prompt, in order (at most 16 prompts)."""
    prompts = [str(p) for p in prompts]
    if len(prompts) > MAX_BATCH:
        raise ValueError("llm_batch: at most %d prompts per batch, got %d; split the list"
                         % (MAX_BATCH, len(prompts)))
    if not prompts:
        return []
    reply = _ask({"op": "llm", "prompts": prompts})
    if reply.get("error") is not None:
        raise RuntimeError("child call failed: %s" % reply["error"])
    return reply["answers"]


def llm(prompt):
    """The answer of one child model call."""
    return llm_batch([prompt])[0]


def rlm_query(prompt, context):
    """The answer of a recursive child: an RLM of its own holding `context` in its REPL, while
    depth remains; a plain completion with the context inline (cut) once it is spent."""
    reply = _ask({"op": "rlm", "prompt": str(prompt), "context": _text(context)})
    if reply.get("error") is not None:
        raise RuntimeError("child call failed: %s" % reply["error"])
    return reply["answers"][0]


_final = [None]


def final(answer):
    """Ends the RLM session with `answer` (converted to text) once this round finishes."""
    _final[0] = str(answer)


_env = {
    "__name__": "__rlm__",
    "peek": peek,
    "grep": grep,
    "chunks": chunks,
    "llm": llm,
    "llm_batch": llm_batch,
    "rlm_query": rlm_query,
    "final": final,
    "inputs": {},
}


def _round(code, number):
    capture = _Capture()
    saved = sys.stdout
    sys.stdout = capture
    error = None
    try:
        exec(compile(code, "<round>", "exec"), _env)
    except SystemExit:
        error = "SystemExit is not allowed in a round; call final(answer) to finish"
    except BaseException:
        lines = traceback.format_exc().splitlines()
        error = "\n".join(lines[-12:])
    finally:
        sys.stdout = saved
    out = capture.text()
    _env["last_output"] = out
    _send({"op": "done", "round": number, "output": out, "output_chars": capture.total,
           "final": _final[0], "error": error})


def main():
    _send({"op": "ready"})
    while True:
        with _pipe:
            msg = _recv()
            op = msg.get("op")
            if op == "load":
                value = _load_value(msg["parts"])
        if op == "load":
            _env[msg["name"]] = value
            _env["inputs"][msg["name"]] = msg.get("meta", {})
            _send({"op": "ready"})
        elif op == "exec":
            _round(msg["code"], msg.get("round"))
        else:
            _send({"op": "done", "output": "", "output_chars": 0, "final": None,
                   "error": "driver: unknown op %r" % op})


main()
