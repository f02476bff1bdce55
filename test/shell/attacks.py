# What a hostile sandboxed command tries against every process it can find of core's (`python3 attacks.py
# SUPERVISOR`): its supervisor, its own reaper (the supervisor's other child, where there is no PID namespace), core,
# the spare supervisor and starter readied for the next call, another call's supervisor and command (named
# core-victim, which waits for a file `done` this writes last). Waits (up to 20 s)
# until it sees them all where it sees core. Prints, for each, what each attempt answered: "ok" or the errno. Each
# change would set what the process has now, so an attempt let through changes nothing but its result.
import ctypes, fcntl, json, os, resource, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
supervisor = int(sys.argv[1])

def stat(pid):
    text = open(f"/proc/{pid}/stat").read()
    return text[text.rindex(")") + 2:].split()

def cmdline(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        return []

def children(parent):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(stat(entry)[1]) == parent:
                    found.append(int(entry))
            except (OSError, IndexError):
                pass
    return found

def launched(pid, word):
    return any(part.endswith(word.encode()) for part in cmdline(pid))

def find():
    found = {"supervisor": supervisor}
    core = int(stat(supervisor)[1])
    if core == 0:
        return found
    found["core"] = core
    # This program's parent is the command: whatever else the supervisor has is the command's reaper.
    for child in children(supervisor):
        if child != os.getppid():
            found["reaper"] = child
    for other in children(core):
        if other == supervisor or not launched(other, "__supervise"):
            continue
        for child in children(other):
            if launched(child, "__start"):
                found["spare supervisor"] = other
                found["spare starter"] = child
            elif cmdline(child)[:1] == [b"core-victim"]:
                found["other supervisor"] = other
                found["other command"] = child
    return found

# In a PID namespace of its own, the command sees its supervisor alone (whose parent it sees as 0).
deadline = time.time() + 20
targets = find()
while "core" in targets and len(targets) < 7 and time.time() < deadline:
    time.sleep(0.1)
    targets = find()

def attempt(call):
    try:
        call()
        return "ok"
    except OSError as error:
        return error.errno

def checked(result, name):
    if result < 0:
        raise OSError(ctypes.get_errno(), name)

PTRACE_ATTACH = 16
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]

def vm_read(pid):
    buffer = ctypes.create_string_buffer(8)
    local = iovec(ctypes.cast(buffer, ctypes.c_void_p), 8)
    remote = iovec(0x400000, 8)
    checked(libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0), "process_vm_readv")

def ptrace(pid):
    checked(libc.ptrace(PTRACE_ATTACH, pid, None, None), "ptrace")

def pidfd_kill(pid):
    signal.pidfd_send_signal(os.pidfd_open(pid), signal.SIGKILL)

def fds(pid):
    # Numbers alone say little: what they are, or a descriptor of its own to the same pipe, would.
    entries = os.listdir(f"/proc/{pid}/fd")
    errors = []
    for entry in entries:
        for reach in (lambda: os.readlink(f"/proc/{pid}/fd/{entry}"), lambda: os.close(os.open(f"/proc/{pid}/fd/{entry}", os.O_RDONLY | os.O_NONBLOCK))):
            try:
                reach()
                return
            except OSError as error:
                errors.append(error.errno)
    raise OSError(errors[0] if errors else 0, "no descriptor reached")

def alive(pid):
    try:
        return stat(pid)[0] != "Z"
    except OSError:
        return False

def sigio(pid):
    # Its owner gets SIGKILL once the pipe can be read: let through, the target is gone; refused, it lives on
    # (answered as EPERM, as nothing else says so).
    read, write = os.pipe()
    fcntl.fcntl(read, fcntl.F_SETOWN, pid)
    fcntl.fcntl(read, 10, signal.SIGKILL)  # F_SETSIG
    fcntl.fcntl(read, fcntl.F_SETFL, fcntl.fcntl(read, fcntl.F_GETFL) | os.O_ASYNC)
    os.write(write, b"x")
    time.sleep(0.05)
    os.close(read)
    os.close(write)
    if alive(pid):
        raise OSError(1, "not delivered")

# ioprio_set and ioprio_get, pidfd_getfd: system calls Python has no function for.
IOPRIO_SET, IOPRIO_GET = {"x86_64": (251, 252), "aarch64": (30, 31)}[os.uname().machine]
PIDFD_GETFD = 438
IOPRIO_WHO_PROCESS = 1

def ioprio(pid):
    current = libc.syscall(IOPRIO_GET, IOPRIO_WHO_PROCESS, pid)
    checked(current, "ioprio_get")
    checked(libc.syscall(IOPRIO_SET, IOPRIO_WHO_PROCESS, pid, current), "ioprio_set")

def steal(pid):
    # A descriptor of its own (the supervisor's channel to core, say) copied out of the target.
    pidfd = os.pidfd_open(pid)
    try:
        for fd in range(64):
            if libc.syscall(PIDFD_GETFD, pidfd, fd, 0) >= 0:
                return
        raise OSError(ctypes.get_errno(), "pidfd_getfd")
    finally:
        os.close(pidfd)

def oom(pid):
    path = f"/proc/{pid}/oom_score_adj"
    value = open(path).read()
    with open(path, "w") as file:
        file.write(value)

results = {}
for name, pid in targets.items():
    # Each change would set what the process has now: were it let through, nothing would change but the result.
    results[name] = {
        "signal": attempt(lambda: os.kill(pid, 0)),
        "pidfd signal": attempt(lambda: pidfd_kill(pid)),
        "sigio": attempt(lambda: sigio(pid)),
        "ptrace": attempt(lambda: ptrace(pid)),
        "process_vm_readv": attempt(lambda: vm_read(pid)),
        "mem": attempt(lambda: open(f"/proc/{pid}/mem", "rb").close()),
        "environ": attempt(lambda: open(f"/proc/{pid}/environ", "rb").read()),
        "fds": attempt(lambda: fds(pid)),
        "oom_score_adj": attempt(lambda: oom(pid)),
        "prlimit": attempt(lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, resource.prlimit(pid, resource.RLIMIT_NOFILE))),
        "setpriority": attempt(lambda: os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, pid))),
        "sched_setaffinity": attempt(lambda: os.sched_setaffinity(pid, os.sched_getaffinity(pid))),
        "ioprio_set": attempt(lambda: ioprio(pid)),
        "pidfd_getfd": attempt(lambda: steal(pid)),
        "sched_setscheduler": attempt(lambda: os.sched_setscheduler(pid, os.sched_getscheduler(pid), os.sched_getparam(pid))),
    }
# Every process of the user at once, core's among them.
results["every process of the user"] = {
    "setpriority": attempt(lambda: os.setpriority(os.PRIO_USER, 0, os.getpriority(os.PRIO_USER, 0))),
}
open("done", "w").close()
print(json.dumps(results))
