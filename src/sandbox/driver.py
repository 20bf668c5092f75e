# driver.py - the persistent Python interpreter behind run_python.
#
# sandbox-mcp starts this as `python3 -c <this file>` in a session's container,
# with stdin and stdout attached to one exec stream, and speaks frames both
# ways: [type byte][4-byte big-endian length][payload] (see src/repl.h).
#
#   server -> driver  'c' {cell, code, workspace, cap, save_cap}   'i' interrupt cell N
#   driver -> server  'h' {python, pid}   'o'/'e' output chunks   'f' PNG
#                     'r' {cell, value, error, files, usage, ...} (ends a cell)
#
# usage is {cpu_ms, max_rss_kb} of the cell's code, from getrusage deltas:
# cpu_ms is user+system time of the interpreter (all its threads) and of the
# children the cell waited for; max_rss_kb the interpreter's peak RSS during
# the cell (its high-water mark is reset at the cell's start through
# /proc/self/clear_refs; where that cannot be written, the peak since the
# interpreter started), or a waited-for child's, when a child beat every
# earlier one (getrusage keeps only the largest child ever).
#
# The original fds 0 and 1 become private protocol fds; fds 1 and 2 become
# pipes that an I/O thread forwards as 'o'/'e' frames, so nothing user code
# or its subprocesses write can break the framing.  Cells run in the main
# thread; a reader thread takes frames off stdin, queues cells and turns 'i'
# into SIGINT for the main thread (KeyboardInterrupt, state kept).  EOF on
# stdin ends the process.  Plain Python 3.6+, standard library only.
import _ast
import builtins
import io
import json
import os
import resource
import select
import signal
import struct
import sys
import threading
import time
import types
import warnings

FIG_MAX = 8          # figures returned per cell
FIG_SIDE = 1600      # longest side of a figure in pixels
VALUE_MAX = 20000    # characters of repr() kept
TB_MAX = 20000       # characters of traceback kept
SCAN_MAX = 5000      # workspace entries looked at per scan
FILES_MAX = 100      # changed files listed
SYNC_MAX = 1 << 20   # bytes drained at the end of a cell
OUTPUT_KEEP = 16     # saved output files kept, as run_command keeps (tool-run.c RUN_OUTPUT_KEEP)
RESULT_MAX = 1 << 20 # bytes of a result frame (the server's PYREPL_RESULT_MAX)
SKIP_DIRS = {".sandbox-mcp", ".git", "__pycache__", ".ipynb_checkpoints", "node_modules"}
HERE = sys._getframe().f_code.co_filename

PIN = os.dup(0)
POUT = os.dup(1)
DIAG = os.dup(2)
_fd = os.open(os.devnull, os.O_RDONLY)
os.dup2(_fd, 0)
os.close(_fd)
_r1, _w1 = os.pipe()
_r2, _w2 = os.pipe()
os.dup2(_w1, 1)
os.dup2(_w2, 2)
os.close(_w1)
os.close(_w2)
os.set_blocking(_r1, False)
os.set_blocking(_r2, False)
_ctl_r, _ctl_w = os.pipe()




def _text(fd, mode):
    return io.open(fd, mode, buffering=1 if mode == "w" else -1, encoding="utf-8", errors="backslashreplace",
                   closefd=False)


_wlock = threading.Lock()
_busy_lock = threading.Lock()
_busy = 0            # the cell number while user code runs, else 0
_stop = b""          # the last cell the server asked to interrupt
_synced = threading.Event()
_main = threading.main_thread().ident
_figs = 0


def send(t, payload=b""):
    hdr = struct.pack(">cI", t, len(payload))
    with _wlock:
        _write_all(hdr + payload if len(payload) < 65536 else hdr)
        if len(payload) >= 65536:
            _write_all(payload)


def _write_all(b):
    mv = memoryview(b)
    while mv:
        mv = mv[os.write(POUT, mv):]


def _read_exact(n):
    b = b""
    while len(b) < n:
        d = os.read(PIN, n - len(b))
        if not d:
            return None
        b += d
    return b


def _quiet_thread():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


class _Tee:
    """Keeps a cell's output past the server's cap in a workspace file (the server keeps head and tail)."""

    def __init__(self, name):
        self.name, self.lock = name, threading.Lock()
        self.reset(None, 0, None, 0)

    def reset(self, ws, cap, tag, save_cap):
        with self.lock:
            if getattr(self, "file", None):
                self.file.close()
            self.ws, self.cap, self.tag, self.save_cap = ws, cap, tag, save_cap
            self.head, self.total, self.file, self.path, self.failed = bytearray(), 0, None, None, False
            self.written, self.cut = 0, False

    def add(self, d):
        with self.lock:
            self.total += len(d)
            if self.file:
                self._write(d)
            elif self.ws and self.cap and not self.failed and self.total > self.cap:
                try:
                    folder = os.path.join(self.ws, ".sandbox-mcp", "output")
                    os.makedirs(folder, exist_ok=True)
                    _prune(folder)
                    self.path = os.path.join(folder, "python-%s.%s.log" % (self.tag, self.name))
                    self.file = open(self.path, "wb")
                except OSError:
                    self.failed = True
                    return
                self._write(bytes(self.head))
                self._write(d)
                self.head = None
            elif self.head is not None and len(self.head) < self.cap:
                self.head += d

    def _write(self, d):
        if self.save_cap and len(d) > self.save_cap - self.written:
            d, self.cut = d[:self.save_cap - self.written], True
        try:
            self.file.write(d)
            self.written += len(d)
        except (OSError, ValueError):
            self.failed = True

    def finish(self):
        with self.lock:
            if self.file and self.cut and not self.failed:
                try:
                    self.file.write(("\n[sandbox-mcp: the saved output stops here, after %d of %d bytes "
                                     "(SANDBOX_OUTPUT_SAVE_MB=%d)]\n"
                                     % (self.written, self.total, self.save_cap >> 20)).encode())
                except (OSError, ValueError):
                    self.failed = True
            if self.file:
                try:
                    self.file.close()
                except OSError:
                    self.failed = True
                self.file = None
            return None if self.failed else self.path


_tees = {b"o": _Tee("stdout"), b"e": _Tee("stderr")}


def _prune(folder):
    """Keeps the newest OUTPUT_KEEP - 1 saved output files (only ours, by name), making room for one more."""
    try:
        old = []
        for n in os.listdir(folder):
            if (n.startswith("run-") or n.startswith("python-")) and n.endswith(".log"):
                st = os.lstat(os.path.join(folder, n))
                old.append((st.st_mtime, n))
        old.sort(reverse=True)
        for _, n in old[OUTPUT_KEEP - 1:]:
            os.unlink(os.path.join(folder, n))
    except OSError:
        pass


def _drain(fd, t, budget):
    while budget > 0:
        try:
            d = os.read(fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        if not d:
            return
        send(t, d)
        _tees[t].add(d)
        budget -= len(d)


def _pump():
    _quiet_thread()
    while True:
        ready = select.select([_r1, _r2, _ctl_r], [], [])[0]
        if _r1 in ready:
            _drain(_r1, b"o", 1 << 20)
        if _r2 in ready:
            _drain(_r2, b"e", 1 << 20)
        if _ctl_r in ready:
            os.read(_ctl_r, 64)
            _drain(_r1, b"o", SYNC_MAX)
            _drain(_r2, b"e", SYNC_MAX)
            _synced.set()


class _Cells:
    """The cells waiting to run (queue.Queue without its imports)."""

    def __init__(self):
        self.items, self.cond = [], threading.Condition()

    def put(self, item):
        with self.cond:
            self.items.append(item)
            self.cond.notify()

    def get(self):
        with self.cond:
            while not self.items:
                self.cond.wait()
            return self.items.pop(0)


def _reader(cells):
    global _stop
    _quiet_thread()
    while True:
        hdr = _read_exact(5)
        if hdr is None:
            os._exit(0)
        t, n = struct.unpack(">cI", hdr)
        payload = _read_exact(n) if n else b""
        if payload is None:
            os._exit(0)
        if t == b"c":
            cells.put(payload)
        elif t == b"i":
            with _busy_lock:
                _stop = payload
                if _busy and str(_busy).encode() == payload:
                    signal.pthread_kill(_main, signal.SIGINT)


def _on_sigint(signum, frame):
    if _busy:
        raise KeyboardInterrupt


def _sync():
    """Flushes the cell's output and waits until every byte of it was sent."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    _synced.clear()
    os.write(_ctl_w, b"s")
    _synced.wait(5)


def _clean(o):
    """Makes strings safe for strict JSON decoders (no lone surrogates)."""
    if isinstance(o, str):
        return o.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_clean(v) for v in o]
    return o


def _cut(s, n):
    if len(s) <= n:
        return s
    return s[:n // 2] + "\n... [%d characters left out] ...\n" % (len(s) - n) + s[-(n // 2):]


def _remember(fname, src):
    """Keeps a cell's source for tracebacks and inspect; linecache is imported only when needed."""
    _sources[fname] = src
    lc = sys.modules.get("linecache")
    if lc is not None:
        _to_linecache(lc)


def _to_linecache(lc):
    for name, text in _sources.items():
        if name not in lc.cache:
            lc.cache[name] = (len(text), None, text.splitlines(True), name)


def _error(e):
    import linecache
    _to_linecache(linecache)
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == HERE:
        tb = tb.tb_next
    try:
        import traceback
        te = traceback.TracebackException(type(e), e, tb)
        te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != HERE])
        text = "".join(te.format())
    except BaseException as fe:
        text = "%s: %s (formatting the traceback failed: %r)" % (type(e).__name__, e, fe)
    try:
        msg = str(e)
    except BaseException:
        msg = "<str() failed>"
    return {"type": type(e).__name__, "message": _cut(msg, 2000), "traceback": _cut(text, TB_MAX)}


def _emit_figures():
    """Sends the open matplotlib figures as PNG (longest side <= FIG_SIDE) and closes them."""
    global _figs
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in list(plt.get_fignums()):
        fig = plt.figure(num)
        try:
            if _figs < FIG_MAX:
                w, h = fig.get_size_inches()
                dpi = min(float(fig.dpi), FIG_SIDE / max(w, h, 0.01))
                bio = io.BytesIO()
                fig.savefig(bio, format="png", dpi=dpi)
                send(b"f", bio.getvalue())
            _figs += 1
        except Exception as e:
            send(b"e", ("figure %s could not be rendered: %s: %s\n" % (num, type(e).__name__, e)).encode())
        finally:
            plt.close(fig)


def _show(*args, **kwargs):
    _emit_figures()


def _scan(root):
    seen, stack = {}, [""]
    while stack:
        rel = stack.pop()
        try:
            it = os.scandir(os.path.join(root, rel) if rel else root)
        except OSError:
            continue
        with it:
            for de in it:
                if len(seen) >= SCAN_MAX:
                    return seen, True
                p = rel + "/" + de.name if rel else de.name
                try:
                    if de.is_dir(follow_symlinks=False):
                        if de.name not in SKIP_DIRS:
                            stack.append(p)
                        continue
                    st = de.stat(follow_symlinks=False)
                except OSError:
                    continue
                seen[p] = (st.st_mtime_ns, st.st_size)
    return seen, False


def _changes(before, after):
    out = []
    for p, (m, s) in sorted(after.items()):
        old = before.get(p)
        if old is None:
            out.append({"path": p, "change": "created", "size": s})
        elif old != (m, s):
            out.append({"path": p, "change": "modified", "size": s})
    for p in sorted(set(before) - set(after)):
        out.append({"path": p, "change": "deleted"})
    return out


_TLA = getattr(_ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
_sources = {}        # every cell's source, by its file name "<cell-N>"


def _usage_start():
    """getrusage of the interpreter and its children, after resetting the interpreter's peak RSS."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))


def _usage_end(u0):
    s0, c0 = u0
    s1 = resource.getrusage(resource.RUSAGE_SELF)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (s1.ru_utime + s1.ru_stime - s0.ru_utime - s0.ru_stime) + (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)
    rss = s1.ru_maxrss
    if c1.ru_maxrss > c0.ru_maxrss:
        rss = max(rss, c1.ru_maxrss)
    return {"cpu_ms": int(round(max(cpu, 0) * 1000)), "max_rss_kb": int(rss)}


def _run(code, ns):
    r = eval(code, ns)
    if _TLA and code.co_flags & 0x80:  # CO_COROUTINE: the cell used top-level await
        import asyncio
        r = asyncio.new_event_loop().run_until_complete(r)
    return r


def run_cell(req, ns):
    global _busy, _figs
    cell = int(req["cell"])
    src = req["code"]
    ws = req.get("workspace")
    fname = "<cell-%d>" % cell
    _remember(fname, src)
    res = {"cell": cell}
    _figs = 0
    tag = "%d-%d" % (int(time.time() * 1000), cell)
    u0 = None
    for t in _tees.values():
        t.reset(ws, int(req.get("cap") or 0), tag, int(req.get("save_cap") or 0))
    before = _scan(ws) if ws else None
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.show = _show
    try:
        tree = compile(src, fname, "exec", _ast.PyCF_ONLY_AST | _TLA, True)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], _ast.Expr) else None
        body = compile(tree, fname, "exec", _TLA, True)
        expr = None
        if last is not None:
            expr = compile(_ast.Expression(last.value), fname, "eval", _TLA, True)
        try:
            with _busy_lock:
                _busy = cell
                if _stop == str(cell).encode():
                    raise KeyboardInterrupt
            u0 = _usage_start()
            _run(body, ns)
            if expr is not None:
                v = _run(expr, ns)
                if v is not None:
                    ns["_"] = v
                    try:
                        res["value"] = _cut(repr(v), VALUE_MAX)
                    except Exception as e:
                        res["value"] = "<repr() failed: %s: %s>" % (type(e).__name__, e)
        finally:
            with _busy_lock:
                _busy = 0
            if u0 is not None:
                res["usage"] = _usage_end(u0)
    except BaseException as e:
        res["error"] = _error(e)
    try:
        _emit_figures()
    except BaseException as e:
        send(b"e", ("collecting figures failed: %r\n" % (e,)).encode())
    if _figs > FIG_MAX:
        res["figures_dropped"] = _figs - FIG_MAX
    if before is not None:
        after = _scan(ws)
        ch = _changes(before[0], after[0])
        res["files"] = ch[:FILES_MAX]
        if len(ch) > FILES_MAX or before[1] or after[1]:
            res["files_incomplete"] = True
    _sync()
    saved = {}
    for t in _tees.values():
        path = t.finish()
        if path:
            saved[t.name] = path
            if t.cut:
                res["output_files_cut"] = True
    if saved:
        res["output_files"] = saved
    return res


def _result_frame(res):
    """The result as JSON under RESULT_MAX: the changed-files list goes first, then the value's text."""
    out = json.dumps(_clean(res)).encode("utf-8", "backslashreplace")
    if len(out) > RESULT_MAX and "files" in res:
        res.pop("files")
        res["files_incomplete"] = True
        out = json.dumps(_clean(res)).encode("utf-8", "backslashreplace")
    if len(out) > RESULT_MAX and "value" in res:
        res["value"] = "<the value's repr() was too long to return>"
        out = json.dumps(_clean(res)).encode("utf-8", "backslashreplace")
    return out


def main():
    sys.stdin = sys.__stdin__ = _text(0, "r")
    sys.stdout = sys.__stdout__ = _text(1, "w")
    sys.stderr = sys.__stderr__ = _text(2, "w")
    sys.argv = [""]
    warnings.filterwarnings("ignore", message=".*(non-interactive|non-GUI backend).*")
    cells = _Cells()
    signal.signal(signal.SIGINT, _on_sigint)
    threading.Thread(target=_pump, name="sandbox-mcp-pump", daemon=True).start()
    threading.Thread(target=_reader, args=(cells,), name="sandbox-mcp-reader", daemon=True).start()
    mod = types.ModuleType("__main__")
    mod.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = mod
    ns = mod.__dict__
    send(b"h", json.dumps({"python": sys.version.split()[0], "pid": os.getpid()}).encode())
    while True:
        req = None
        try:
            req = json.loads(cells.get().decode("utf-8", "surrogatepass"))
            res = run_cell(req, ns)
        except BaseException as e:
            res = {"cell": req.get("cell", 0) if isinstance(req, dict) else 0, "error": _error(e)}
        send(b"r", _result_frame(res))


try:
    main()
except BaseException:
    import traceback
    os.write(DIAG, ("sandbox-mcp driver failed:\n" + traceback.format_exc()).encode("utf-8", "replace"))
    os._exit(70)
