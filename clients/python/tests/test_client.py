"""core_client against the compiled binary (its path in $CORE_BINARY): a host's loop scripted without a model (list,
read, edit, bash with an ask, grep and glob in parallel, an image, bad input), JSON calls replayed with the same ids,
the check route, cancellation (the command's process checked in /proc), managed outputs by range, events, and a
session that materializes again after tools.changed and after a stale call.

Run: CORE_BINARY=/path/to/core python3 -m unittest discover -s clients/python/tests
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core_client import Core, CoreError, PermissionRequest, Progress  # noqa: E402

BINARY = os.environ.get("CORE_BINARY", "core")
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
IMPORTS = 'import { Tool } from "@core/tool"\nimport { Effect, Schema } from "effect"\n'


def echo_tool(description: str) -> str:
    quoted = json.dumps(description)
    return (
        IMPORTS
        + f"export default Tool.make({{ description: {quoted}, input: Schema.Struct({{}}), output: Schema.String, "
        + f"execute: () => Effect.succeed({quoted}) }})\n"
    )


class Sandbox:
    """A Location with files, its own CORE_HOME and data directory, and core serve on it."""

    def __init__(self, files: dict) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="core-py-"))
        self.location = self.root / "project"
        for path, content in files.items():
            target = self.location / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content if isinstance(content, bytes) else content.encode())
        (self.root / "home").mkdir()
        (self.root / "data").mkdir()
        env = dict(os.environ, CORE_HOME=str(self.root / "home"), CORE_DATA_DIR=str(self.root / "data"))
        self.core = Core.spawn(BINARY, location=str(self.location), env=env, stderr=subprocess.DEVNULL)

    def close(self) -> None:
        self.core.close()
        shutil.rmtree(self.root, ignore_errors=True)


def project(extra: dict = {}) -> Sandbox:  # noqa: B006 - never mutated
    return Sandbox(
        {
            "core.json": '{ "permission": { "bash": { "*": "ask" } } }',
            "notes.txt": "alpha\nbeta\ngamma\n",
            "src/app.ts": "export const greet = (name: string) => `hello ${name}`\n",
            "src/util.ts": "export const twice = (n: number) => n * 2 // hello again\n",
            "pixel.png": PNG,
            **extra,
        }
    )


def alive_in(cwd: Path, pid: int) -> bool:
    """Whether a process a command printed still runs, numbered as the command numbers it ($$, $!: its own PID
    namespace's where it has one): a running process working in `cwd` whose innermost pid is `pid`."""
    real = str(cwd.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") != real:
                continue
            status = (entry / "status").read_text()
            innermost = re.search(r"^NSpid:\s*(.*)$", status, re.M)
            if innermost and int(innermost.group(1).split()[-1]) == pid and not is_dead(int(entry.name)):
                return True
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return False


def is_dead(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


class HostLoop(unittest.TestCase):
    def setUp(self) -> None:
        self.box = project()
        self.addCleanup(self.box.close)

    def test_a_hosts_loop_runs_through_the_client(self) -> None:
        session = self.box.core.session()
        self.addCleanup(session.close)
        names = [definition["name"] for definition in session.definitions()]
        for name in ["list", "read", "edit", "bash", "grep", "glob"]:
            self.assertIn(name, names)
        read_tool = next(d for d in session.definitions() if d["name"] == "read")
        self.assertTrue(read_tool.get("annotations", {}).get("readOnly"))

        listed = session.call("list", {})
        self.assertEqual(listed["status"], "success")
        self.assertIn("notes.txt", listed["content"][0]["text"])
        read = session.call("read", {"filePath": "notes.txt"})
        self.assertIn("beta", read["content"][0]["text"])
        edited = session.call("edit", {"filePath": "notes.txt", "oldString": "beta", "newString": "BETA"})
        self.assertEqual(edited["status"], "success")
        self.assertEqual((self.box.location / "notes.txt").read_text(), "alpha\nBETA\ngamma\n")

        asks: list = []

        def on_ask(ask: PermissionRequest) -> str:
            asks.append(ask)
            return "once"

        progress: list = []
        shell = session.call("bash", {"command": "cat notes.txt"}, tool_call_id="c_bash", on_ask=on_ask, on_progress=progress.append)
        self.assertEqual([(ask["action"], ask["resources"], ask["toolCallID"]) for ask in asks], [("bash", ["cat notes.txt"], "c_bash")])
        self.assertEqual(shell["structured"]["stdout"], "alpha\nBETA\ngamma\n")
        self.assertTrue(progress)

        # One model step with two calls, settled side by side.
        with ThreadPoolExecutor(2) as pool:
            grep = pool.submit(session.call, "grep", {"pattern": "hello"})
            glob = pool.submit(session.call, "glob", {"pattern": "**/*.ts"})
            self.assertIn("src/app.ts", str(grep.result()["structured"]))
            self.assertIn("src/util.ts", glob.result()["structured"]["files"])

        image = session.call("read", {"filePath": "pixel.png"})
        files = [part for part in image["content"] if part["type"] == "file"]
        self.assertEqual(files[0]["mime"], "image/png")
        self.assertEqual(base64.b64decode(files[0]["uri"].split(",", 1)[1]), PNG)

        bad = session.call("read", {"filePath": 42})
        self.assertEqual(bad["status"], "error")
        self.assertEqual(bad["error"]["kind"], "invalid_input")
        self.assertIn("Invalid input for read", bad["content"][0]["text"])

    def test_host_tools_are_registered_performed_answered_once_and_removed(self) -> None:
        core = self.box.core
        ticket = {
            "name": "open_ticket",
            "description": "Open a ticket in the host's tracker",
            "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
            "outputSchema": {"type": "object", "properties": {"ticket": {"type": "integer"}}, "required": ["ticket"]},
        }
        names = [tool["name"] for tool in core.register_host_tools(enable=["question"], tools=[ticket])]
        self.assertEqual(names, ["question", "open_ticket"])
        with self.assertRaises(CoreError) as refused:
            core.register_host_tools(tools=[dict(ticket, name="bash")])
        self.assertEqual((refused.exception.status, refused.exception.kind), (409, "conflict"))
        with self.assertRaises(CoreError) as bad:
            core.register_host_tools(enable=["nope"])
        self.assertEqual(bad.exception.status, 400)

        session = core.session()
        self.addCleanup(session.close)
        question = {"questions": [{"question": "Ship it?", "options": [{"label": "Yes"}, {"label": "No"}]}]}
        seen: list = []

        def perform(call: dict) -> dict:
            seen.append(call)
            return {"output": {"answers": [["Yes"]]}}

        answered = session.call("question", question, on_host_call=perform)
        self.assertEqual([(call["name"], call["input"]) for call in seen], [("question", question)])
        self.assertEqual(answered["structured"], {"answers": [["Yes"]]})
        self.assertIn('"Ship it?" = "Yes"', answered["content"][0]["text"])

        def fail(call: dict) -> dict:
            raise RuntimeError("the tracker is read-only today")

        failed = session.call("open_ticket", {"title": "x"}, on_host_call=fail)
        self.assertEqual(failed["error"], {"kind": "failure", "message": "open_ticket: the tracker is read-only today"})

        # Settled as JSON from another thread: this host answers from host_calls, as after a reconnect.
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(session.call, "open_ticket", {"title": "y"})
            events = core.events()
            waiting = core.host_calls()
            if not waiting:
                for event in events:
                    if event["event"] == "host_call":
                        break
                waiting = core.host_calls()
            events.close()
            with self.assertRaises(CoreError) as invalid:
                core.answer_host_call(waiting[0]["id"], {"output": {"ticket": "seven"}})
            self.assertEqual(invalid.exception.status, 400)
            core.answer_host_call(waiting[0]["id"], {"output": {"ticket": 7}})
            with self.assertRaises(CoreError) as twice:
                core.answer_host_call(waiting[0]["id"], {"output": {"ticket": 8}})
            self.assertEqual(twice.exception.status, 409)
            self.assertEqual(pending.result()["structured"], {"ticket": 7})

        self.assertTrue(core.remove_host_tool("open_ticket"))
        self.assertFalse(core.remove_host_tool("open_ticket"))
        self.assertEqual([tool["name"] for tool in core.host_tools()], ["question"])

    def test_json_calls_replay_with_the_same_ids_and_check_runs_nothing(self) -> None:
        core = self.box.core
        turn = core.materialize()
        call = {"sessionID": "ses_py", "assistantMessageID": "m", "toolCallID": "c_1", "name": "read", "input": {"filePath": "notes.txt"}}
        first = core.settle(turn["turnID"], call)
        self.assertEqual(core.settle(turn["turnID"], call), first)
        self.assertEqual(core.settlement("ses_py", "c_1"), first)
        self.assertIsNone(core.settlement("ses_py", "c_none"))
        # "." and ".." name no call (core refuses them as ids) and no path can hold them: "/.." is a step up.
        for session, call_id in (("ses_py", ".."), ("ses_py", "."), ("..", "c_1")):
            self.assertIsNone(core.settlement(session, call_id))
            self.assertFalse(core.cancel(session, call_id))
        self.assertEqual(core.todos(".."), {"sessionID": "..", "todos": []})
        with self.assertRaises(CoreError) as refused:
            core.settle(turn["turnID"], dict(call, toolCallID=".."))
        self.assertEqual(refused.exception.status, 400)
        recorded = core.calls(session_id="ses_py", since="1h", limit=10)
        self.assertEqual([(entry["toolCallID"], entry["tool"], entry["status"], entry["input"]) for entry in recorded], [("c_1", "read", "success", {"filePath": "notes.txt"})])
        self.assertEqual(core.calls(session_id="ses_none"), [])
        todos = [{"content": "Ship", "status": "in_progress", "priority": "high"}]
        core.settle(turn["turnID"], dict(call, toolCallID="c_todo", name="todowrite", input={"todos": todos}))
        self.assertEqual(core.todos("ses_py"), {"sessionID": "ses_py", "todos": todos})
        self.assertEqual(core.todos("ses_none")["todos"], [])
        check = core.check(turn["turnID"], "bash", {"command": "rm -rf build"})
        self.assertEqual(check["decision"], "ask")
        self.assertEqual(core.permissions(), [])
        # A turn for a provider holds that provider's tools, and its calls that provider's tool-result block.
        prepared = core.materialize(provider="anthropic")
        self.assertEqual(len(prepared["tools"]), len(prepared["definitions"]))
        answered = core.settle(prepared["turnID"], dict(call, toolCallID="toolu_1"))
        self.assertEqual((answered["result"]["type"], answered["result"]["tool_use_id"]), ("tool_result", "toolu_1"))
        with self.assertRaises(CoreError) as refused:
            Core.connect(core.url, "wrong").materialize()
        self.assertEqual((refused.exception.status, refused.exception.kind), (401, "unauthorized"))
        with self.assertRaises(CoreError) as gone:
            core.settle("turn_nope", call)
        self.assertEqual(gone.exception.status, 404)

    def test_setting_cancel_cancels_the_call_on_core(self) -> None:
        core = self.box.core
        turn = core.materialize()
        cancel = threading.Event()
        pids: list = []

        def on_progress(update: Progress) -> None:
            match = re.search(r"pid (\d+)", update["message"])
            if match and not pids:
                pids.append(int(match.group(1)))
                cancel.set()

        settlement = core.settle(
            turn["turnID"],
            {"sessionID": "ses_c", "assistantMessageID": "m", "toolCallID": "c_c", "name": "bash", "input": {"command": "echo pid $$; sleep 300"}},
            on_ask=lambda ask: "once",
            on_progress=on_progress,
            cancel=cancel,
        )
        self.assertEqual(settlement["status"], "cancelled")
        self.assertFalse(alive_in(self.box.location, pids[0]))


class Outputs(unittest.TestCase):
    def test_a_managed_output_reads_whole_by_range_and_by_suffix(self) -> None:
        box = Sandbox({"core.json": '{ "output": { "maxLines": 10 } }'})
        self.addCleanup(box.close)
        session = box.core.session(watch=False)
        settlement = session.call("bash", {"command": "seq 1 3000"})
        ref = settlement["outputs"][0]
        whole = box.core.output(ref["id"])
        self.assertIn("\n2999\n", whole.text)
        self.assertEqual(whole.size, ref["bytes"])
        part = box.core.output(ref["id"], start=5, end=10)
        self.assertEqual((part.start, part.end, part.size, part.text), (5, 10, ref["bytes"], whole.text[5:11]))
        self.assertEqual(box.core.output(ref["id"], suffix=5).text, whole.text[-5:])
        with self.assertRaises(CoreError) as past:
            box.core.output(ref["id"], start=ref["bytes"] + 10)
        self.assertEqual(past.exception.status, 416)


SLOW_TOOL = (
    IMPORTS
    + """import { appendFileSync, existsSync } from "node:fs"
import { join } from "node:path"
export default Tool.make({
  description: "Report progress, then wait for a gate file",
  input: Schema.Struct({ gate: Schema.String }),
  output: Schema.String,
  execute: (input, context) => Effect.gen(function* () {
    appendFileSync(join(import.meta.dir, "..", "ran.log"), "slow\\n")
    yield* context.progress({ message: "started" })
    while (!existsSync(input.gate)) yield* Effect.sleep("10 millis")
    return "through"
  }),
})
"""
)


class Relay:
    """A TCP proxy in front of core, each connection told apart: `on_request(text, connection)` sees each chunk a host
    sends (before it goes on, its Host header set to core's), and `cut(data, connection)` each chunk core answers with;
    where `cut` says so, the connection is dropped there (the answer lost on its way back)."""

    def __init__(self, target: str) -> None:
        host, _, port = target.split("//", 1)[1].partition(":")
        self.target = (host, int(port))
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def on_request(self, text: str, connection: dict) -> None:
        pass

    def cut(self, data: bytes, connection: dict) -> bool:
        return False

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(self.target)
        connection = {"call": 0}

        def drop() -> None:
            for end in (client, upstream):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        def to_core() -> None:
            while True:
                try:
                    data = client.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    return drop()
                text = data.decode("latin-1")
                self.on_request(text, connection)
                text = re.sub(r"(?im)^host: [^\r\n]*", f"Host: {self.target[0]}:{self.target[1]}", text)
                upstream.sendall(text.encode("latin-1"))

        threading.Thread(target=to_core, daemon=True).start()
        while True:
            try:
                data = upstream.recv(65536)
            except OSError:
                data = b""
            if not data or self.cut(data, connection):
                break
            client.sendall(data)
        drop()
        client.close()
        upstream.close()

    def close(self) -> None:
        self.server.close()


class CuttingProxy(Relay):
    """Drops the connection of the first call once its first event passed, and opens `gate` when the call is posted
    again."""

    def __init__(self, target: str, gate: Path) -> None:
        self.gate = gate
        self.posts = 0
        self.cuts = 0
        super().__init__(target)

    def on_request(self, text: str, connection: dict) -> None:
        if re.match(r"POST \S+/calls ", text):
            with self.lock:
                self.posts += 1
                connection["call"] = self.posts
            if connection["call"] == 2:
                self.gate.write_text("")

    def cut(self, data: bytes, connection: dict) -> bool:
        if connection["call"] == 1 and self.cuts == 0 and b"event: progress" in data:
            self.cuts += 1
            return True
        return False


class Retries(unittest.TestCase):
    def test_a_call_whose_stream_is_cut_is_posted_again_with_the_same_ids_and_runs_once(self) -> None:
        box = Sandbox({"tools/slow.ts": SLOW_TOOL})
        self.addCleanup(box.close)
        gate = box.root / "gate"
        proxy = CuttingProxy(box.core.url, gate)
        self.addCleanup(proxy.close)
        through = Core.connect(proxy.url, box.core.token)
        turn = through.materialize()
        call = {"sessionID": "ses_cut", "assistantMessageID": "m", "toolCallID": "c_cut", "name": "slow", "input": {"gate": str(gate)}}
        settlement = through.settle(turn["turnID"], call, stream=True)
        self.assertEqual((proxy.cuts, proxy.posts), (1, 2))
        self.assertEqual((settlement["status"], settlement["structured"]), ("success", "through"))
        self.assertEqual((box.location / "ran.log").read_text(), "slow\n")


class LosingProxy(Relay):
    """Loses core's answer to the first request matching `request`, once."""

    def __init__(self, target: str, request: str) -> None:
        self.request = re.compile(request)
        self.dropped = 0
        super().__init__(target)

    def on_request(self, text: str, connection: dict) -> None:
        if self.dropped == 0 and self.request.match(text):
            connection["call"] = 1

    def cut(self, data: bytes, connection: dict) -> bool:
        if connection["call"] == 1 and self.dropped == 0:
            self.dropped += 1
            return True
        return False


class LostAnswers(unittest.TestCase):
    # Each is sent again when its answer is lost: the second sending meets what the first did (no such call running,
    # no such tool), which was reported as a failure of what had been done.
    def test_a_cancel_or_a_host_tool_removal_sent_again_answers_true(self) -> None:
        box = Sandbox({"tools/slow.ts": SLOW_TOOL})
        self.addCleanup(box.close)
        gate = box.root / "gate"
        turn = box.core.materialize()
        started = threading.Event()
        call = {"sessionID": "ses_lost", "assistantMessageID": "m", "toolCallID": "c_lost", "name": "slow", "input": {"gate": str(gate)}}
        result: dict = {}
        settling = threading.Thread(
            target=lambda: result.update(box.core.settle(turn["turnID"], call, stream=True, on_progress=lambda progress: started.set()))
        )
        settling.start()
        self.assertTrue(started.wait(30))
        proxy = LosingProxy(box.core.url, r"POST \S+/cancel ")
        self.addCleanup(proxy.close)
        self.assertTrue(Core.connect(proxy.url, box.core.token).cancel("ses_lost", "c_lost"))
        self.assertEqual(proxy.dropped, 1)
        settling.join(30)
        self.assertEqual(result["status"], "cancelled")
        self.assertFalse(box.core.cancel("ses_lost", "c_lost"))

        box.core.register_host_tools(enable=["question"])
        removing = LosingProxy(box.core.url, r"DELETE \S+/host-tools/question ")
        self.addCleanup(removing.close)
        self.assertTrue(Core.connect(removing.url, box.core.token).remove_host_tool("question"))
        self.assertEqual(removing.dropped, 1)
        self.assertEqual(box.core.host_tools(), [])
        self.assertFalse(box.core.remove_host_tool("question"))


class Sessions(unittest.TestCase):
    def test_a_session_materializes_again_after_tools_changed_and_after_a_stale_call(self) -> None:
        box = Sandbox({"tools/hello.ts": echo_tool("v1")})
        self.addCleanup(box.close)
        changed = threading.Event()
        session = box.core.session(on_tools_changed=changed.set)
        blind = box.core.session(watch=False)
        self.addCleanup(session.close)
        first = session.turn()
        blind.turn()
        self.assertIs(session.turn(), first)
        self.assertIs(blind.turn(), blind.turn())
        events = box.core.events()
        (box.location / "tools/hello.ts").write_text(echo_tool("v2"))
        self.assertTrue(changed.wait(30))
        self.assertTrue(session.outdated)
        self.assertNotEqual(session.turn()["turnID"], first["turnID"])
        self.assertEqual(session.call("hello", {})["structured"], "v2")
        seen = []
        for event in events:
            seen.append(event["event"])
            if event["event"] == "call.settled":
                break
        events.close()
        self.assertIn("tools.changed", seen)
        # Without events, a stale call says the tools changed; the next step is fresh.
        self.assertEqual(blind.call("hello", {})["error"]["kind"], "stale")
        self.assertTrue(blind.outdated)
        self.assertEqual([d["description"] for d in blind.definitions() if d["name"] == "hello"], ["v2"])
        self.assertEqual(blind.call("hello", {})["structured"], "v2")
        # core.json changing drops every turn: the call is posted again, same ids, through a fresh turn.
        before = blind.turn()["turnID"]
        changed.clear()
        (box.location / "core.json").write_text('{ "output": { "maxLines": 100 } }')
        self.assertTrue(changed.wait(30))
        again = blind.call("hello", {}, tool_call_id="c_after_config")
        self.assertEqual(again["structured"], "v2")
        self.assertNotEqual(blind.turn()["turnID"], before)
        self.assertEqual(box.core.settlement(blind.id, "c_after_config"), again)


if __name__ == "__main__":
    unittest.main()
