"""fence's Python kernel: runs the cells the host sends, one at a time, in one namespace.

Started by PythonKernel (python-kernel.ts) as `python3 -u kernel.py <config json>`; plain
standard library only.

Protocol: JSON objects, one per line. The host writes on fd 3 and the kernel on fd 4, so that
what user code prints never mixes with the protocol.
  host -> kernel  {"type": "run", "id", "code", "sentinel", "limit"}
                  {"type": "interrupt", "id"}
                  {"type": "tool_result", "id", "ok", "value" | "error"}
  kernel -> host  {"type": "ready", "pid"}
                  {"type": "tool_call", "id", "name", "args"}
                  {"type": "done", "id", "sentinel_written", "value"?, "error"?}

Output: fds 1 and 2 are one pipe to the host (fd 2 is made a copy of fd 1 at start), so
prints, tracebacks and the output of child processes (os.system, subprocess) arrive in the
order they were written. After each cell the kernel writes the host's sentinel to that pipe:
once the host has seen both the sentinel and the `done` message, it has all of the cell's output.
"""

import ast
import json
import linecache
import os
import queue
import signal
import sys
import threading
import types

COMMAND_FD = 3
MESSAGE_FD = 4
KERNEL_FILE = __file__
CO_COROUTINE = 0x80

CONFIG = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
sys.argv = ['']  # as in the REPL: cells must not see the kernel's own arguments

# The user's namespace is a module of its own registered as __main__ (pickle and
# multiprocessing look classes up there); the kernel's globals stay apart.
main_module = types.ModuleType('__main__')
user_ns = main_module.__dict__
user_ns['__builtins__'] = __builtins__
sys.modules['__main__'] = main_module
# Like the REPL: imports resolve against the working folder, not the folder of this file.
sys.path[0] = ''

send_lock = threading.Lock()
run_queue = queue.Queue()
pending_calls = {}
pending_lock = threading.Lock()
state = {'in_cell': False, 'current': None, 'interrupted': False, 'next_call': 0, 'cells': 0, 'loop': None, 'shell': None}
# Cells the host interrupted before they began: they end with KeyboardInterrupt at once.
cancelled = set()
cell_lock = threading.Lock()


def send(message):
    """Writes one protocol line whole. SIGINT is held back meanwhile, so an interrupt never
    cuts a line in two; if the host is gone there is nothing left to do but exit."""
    data = (json.dumps(message) + '\n').encode()
    blocked = threading.current_thread() is threading.main_thread()
    if blocked:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with send_lock:
            view = memoryview(data)
            while view:
                view = view[os.write(MESSAGE_FD, view):]
    except OSError:
        os._exit(70)
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def readable(text):
    """Text that encodes to UTF-8 and JSON whatever it holds (lone surrogates escaped)."""
    return text.encode('utf-8', 'backslashreplace').decode('utf-8')


def capped(text, limit):
    if limit <= 0 or len(text) <= limit:
        return text
    half = limit // 2
    return '%s\n[... %d characters dropped ...]\n%s' % (text[:half], len(text) - 2 * half, text[-half:])


# ---- host tools -----------------------------------------------------------------------------


class ToolError(Exception):
    """Raised in the cell when a host tool fails; the message is the tool's error."""


def new_call_id():
    with pending_lock:
        state['next_call'] += 1
        return 'c%d' % state['next_call']


def tool_arguments(name, positional, kwargs):
    if positional is None:
        return kwargs
    if not isinstance(positional, dict):
        raise TypeError('%s() takes keyword arguments, or one dict of them' % name)
    return {**positional, **kwargs}


def call_tool(name, args, settle):
    """Sends a call to the host; `settle(reply)` runs on the reader thread with its answer."""
    call_id = new_call_id()
    payload = {'type': 'tool_call', 'id': call_id, 'name': name, 'args': args}
    json.dumps(payload)  # a TypeError for arguments that are not JSON, before anything is sent
    with pending_lock:
        pending_calls[call_id] = settle
    send(payload)
    return call_id


def reply_value(reply):
    if reply.get('ok'):
        return reply.get('value')
    raise ToolError(reply.get('error') or 'the tool failed')


def make_sync_tool(name):
    def tool(_args=None, **kwargs):
        done = threading.Event()
        box = {}

        def settle(reply):
            box['reply'] = reply
            done.set()

        call_id = call_tool(name, tool_arguments(name, _args, kwargs), settle)
        try:
            done.wait()
        except KeyboardInterrupt:
            raise KeyboardInterrupt from None  # the traceback ends at the call, not in threading
        finally:
            with pending_lock:
                pending_calls.pop(call_id, None)
        return reply_value(box['reply'])

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = 'Calls the host tool %r and waits for its value; a failure raises ToolError.' % name
    return tool


def make_async_tool(name):
    async def tool(_args=None, **kwargs):
        import asyncio

        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def resolve(reply):
            if not future.done():
                future.set_result(reply)

        def settle(reply):
            try:
                loop.call_soon_threadsafe(resolve, reply)
            except RuntimeError:
                pass  # the loop was closed meanwhile: nobody is waiting any more

        call_id = call_tool(name, tool_arguments(name, _args, kwargs), settle)
        try:
            reply = await future
        finally:
            with pending_lock:
                pending_calls.pop(call_id, None)
        return reply_value(reply)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = 'Awaitable call of the host tool %r; a failure raises ToolError.' % name
    return tool


def gather(*awaitables, return_exceptions=False):
    """asyncio.gather: runs awaitables (e.g. several tools.<name>(...) calls) concurrently."""
    import asyncio

    return asyncio.gather(*awaitables, return_exceptions=return_exceptions)


def install_tools(names):
    tools = types.SimpleNamespace()
    for name in names:
        setattr(tools, name, make_async_tool(name))
        if name.isidentifier():
            user_ns[name] = make_sync_tool(name)
    user_ns['tools'] = tools
    user_ns['ToolError'] = ToolError
    user_ns['gather'] = gather


# ---- running cells --------------------------------------------------------------------------


def event_loop():
    import asyncio

    loop = state['loop']
    if loop is None or loop.is_closed():
        loop = state['loop'] = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop


def evaluate(code):
    if code.co_flags & CO_COROUTINE:
        loop = event_loop()
        try:
            return loop.run_until_complete(eval(code, user_ns))
        except KeyboardInterrupt:
            import asyncio

            for task in asyncio.all_tasks(loop):
                task.cancel()
            raise
    return eval(code, user_ns)


def ipython_source(source):
    """IPython's translation of a cell with IPython syntax (magics, !cmd, obj?), or None when
    IPython is not installed. IPython is imported only when a cell needs it: it costs ~0.5 s."""
    if state['shell'] is False:
        return None
    try:
        if state['shell'] is None:
            from IPython.core.interactiveshell import InteractiveShell
            from traitlets.config import Config

            config = Config()
            config.HistoryManager.enabled = False
            config.InteractiveShell.colors = 'NoColor'
            state['shell'] = InteractiveShell.instance(config=config, user_module=main_module, user_ns=user_ns)
    except Exception:
        state['shell'] = False
        return None
    try:
        return state['shell'].transform_cell(source)
    except Exception:
        return None


def remember_source(filename, source):
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def parse_cell(source, filename):
    try:
        return source, ast.parse(source, filename, 'exec')
    except SyntaxError:
        translated = ipython_source(source)
        if translated is None or translated.strip() == source.strip():
            raise
    remember_source(filename, translated)
    return translated, ast.parse(translated, filename, 'exec')


def run_cell(source, filename):
    """Runs a cell like a REPL: statements in order, then the value of a final expression."""
    remember_source(filename, source)
    source, tree = parse_cell(source, filename)
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not source.rstrip().endswith(';'):
        last = ast.Expression(tree.body.pop().value)
    evaluate(compile(tree, filename, 'exec', flags=flags, dont_inherit=True))
    if last is None:
        return None
    return evaluate(compile(last, filename, 'eval', flags=flags, dont_inherit=True))


def trimmed_traceback(error, filename_prefix='<cell-'):
    """The traceback from the first frame of a cell on, without the kernel's own frames."""
    import traceback

    def trim(summary):
        frames = list(summary.stack)
        start = next((i for i, f in enumerate(frames) if f.filename.startswith(filename_prefix)), len(frames))
        kept = [f for f in frames[start:] if f.filename != KERNEL_FILE]
        summary.stack = traceback.StackSummary.from_list(kept)
        for linked in (summary.__cause__, summary.__context__):
            if linked is not None:
                trim(linked)

    summary = traceback.TracebackException(type(error), error, error.__traceback__)
    if isinstance(error, SyntaxError) and not summary.stack:
        return ''.join(summary.format_exception_only())
    trim(summary)
    return ''.join(summary.format())


def describe_error(error, limit):
    try:
        message = str(error)
    except Exception:
        message = '<the exception could not be shown>'
    try:
        text = trimmed_traceback(error)
    except Exception:
        text = '%s: %s\n' % (type(error).__name__, message)
    return {
        'name': type(error).__name__,
        'message': capped(readable(message), limit),
        'traceback': capped(readable(text), limit),
    }


def show_value(value, limit):
    try:
        text = repr(value)
    except Exception as error:
        text = '<repr() failed: %s: %s>' % (type(error).__name__, error)
    return capped(readable(text), limit)


def on_sigint(signum, frame):
    # Outside a cell an interrupt that came late must not break the kernel's own work. Inside,
    # KeyboardInterrupt is raised once: the host repeats its interrupt until the cell ends (a
    # signal can be lost), and the repeats must not break the cell's own clean-up.
    if state['in_cell'] and not state['interrupted']:
        state['interrupted'] = True
        raise KeyboardInterrupt


def interrupt(cell_id):
    """Reader thread: the host's interrupt of cell `cell_id`, which comes with a SIGINT. The
    signal alone is lost when it arrives before the cell began (ignored between cells), so a
    cell not yet begun is marked to end at once, and a running one that no signal reached yet
    gets one sent to the main thread."""
    with cell_lock:
        if state['current'] != cell_id:
            cancelled.add(cell_id)
        elif state['in_cell'] and not state['interrupted']:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def begin_cell(cell_id):
    """Marks `cell_id` as running; raises KeyboardInterrupt if the host interrupted it already."""
    with cell_lock:
        state['current'] = cell_id
        state['interrupted'] = False
        state['in_cell'] = True
        # The host runs one cell at a time: any other id here is of a cell already over.
        was_cancelled = cell_id in cancelled
        cancelled.clear()
    if was_cancelled:
        raise KeyboardInterrupt


def execute(message, streams, output_fd):
    state['cells'] += 1
    filename = '<cell-%d>' % state['cells']
    limit = int(message.get('limit') or 0)
    reply = {'type': 'done', 'id': message['id']}
    try:
        try:
            begin_cell(message['id'])
            value = run_cell(message['code'], filename)
        finally:
            state['in_cell'] = False
            state['current'] = None
        if value is not None:
            user_ns['_'] = value
            reply['value'] = show_value(value, limit)
    except BaseException as error:  # SystemExit and KeyboardInterrupt end the cell, not the kernel
        state['in_cell'] = False
        reply['error'] = describe_error(error, limit)
    reply['sentinel_written'] = finish_output(streams, output_fd, message['sentinel'])
    send(reply)


def finish_output(streams, output_fd, sentinel):
    """Flushes the cell's output, puts fds 1 and 2 and sys.stdout/sys.stderr back if the cell
    moved them, and writes the sentinel that ends the cell's output."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    sys.stdout, sys.stderr = streams
    try:
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        data = sentinel.encode()
        while data:
            data = data[os.write(output_fd, data):]
        return True
    except OSError:
        return False


def read_commands():
    """Reader thread: queues cells for the main thread and hands tool answers to their callers.
    The host closing fd 3 means it is gone: the kernel exits, taking its process group (the
    children of cells) along when it leads one, as the host starts it."""
    try:
        with open(COMMAND_FD, 'rb', buffering=65536) as commands:
            for line in commands:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if message.get('type') == 'run':
                    run_queue.put(message)
                elif message.get('type') == 'interrupt':
                    interrupt(message.get('id'))
                elif message.get('type') == 'tool_result':
                    with pending_lock:
                        settle = pending_calls.pop(message.get('id'), None)
                    if settle is not None:
                        settle(message)
    finally:
        if os.getpgid(0) == os.getpid():
            os.killpg(0, signal.SIGKILL)
        os._exit(0)


def main():
    for fd in (COMMAND_FD, MESSAGE_FD):
        os.set_inheritable(fd, False)  # child processes must not hold the protocol open
    os.dup2(1, 2)
    output_fd = os.dup(1)
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(encoding='utf-8', errors='backslashreplace')
    streams = (sys.stdout, sys.stderr)
    signal.signal(signal.SIGINT, on_sigint)
    install_tools(CONFIG.get('tools') or [])
    threading.Thread(target=read_commands, name='fence-commands', daemon=True).start()
    send({'type': 'ready', 'pid': os.getpid()})
    while True:
        try:
            message = run_queue.get()
        except KeyboardInterrupt:
            continue
        execute(message, streams, output_fd)


if __name__ == '__main__':
    main()
