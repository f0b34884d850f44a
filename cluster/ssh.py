"""SSH to the hosts of an inventory (paramiko): checked host keys, reused connections, clear errors.

Host keys are checked against the inventory's known_hosts file. A host whose key is not there is refused,
with the key's fingerprint, unless `accept_new_host_keys` is set: then the key is appended to known_hosts
(recorded, and said so) and trusted from then on. A host whose key differs from the recorded one is
refused always; the flag never overrides a changed key.

One connection per (user, host, port) is opened on first use and kept until `close()`; a command has a
deadline that holds even where paramiko itself waits without one (a watchdog closes the channel); every error
names the host and what to fix.

paramiko is imported where a connection is made, not with this module: most runs reach no host over SSH, and
every command would otherwise pay for importing it at start-up.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cluster.inventory import Broker, ClientHost, Inventory, Ssh
from core.errors import EnvironmentProblem, RunFailed

if TYPE_CHECKING:
    import paramiko

Progress = Callable[[str], None]


class HostKeyRefused(EnvironmentProblem):
    """The host's key is unknown (and accepting new keys was not asked for) or differs from known_hosts."""


class RemoteCommandFailed(RunFailed):
    """A command on a host exited non-zero or did not finish in time."""


class _Stalled(Exception):
    """A command passed its deadline (its message says at which stage); `unanswered`: the server had not started
    it yet. `SshPool.run` turns it into RemoteCommandFailed, after one more try when asked."""

    def __init__(self, message: str, unanswered: bool) -> None:
        super().__init__(message)
        self.unanswered = unanswered


_OPENING, _STARTING = "opening a channel", "waiting for the server to start the command"


class _Watchdog:
    """Calls `stop` once `seconds` have passed inside the `with` block (`fired` says whether it did)."""

    def __init__(self, seconds: float, stop: Callable[[], None]) -> None:
        self.fired = threading.Event()
        self._stop = stop
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        self.fired.set()
        self._stop()

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def exit_status(chan: paramiko.Channel, timeout_s: float) -> int | None:
    """The command's exit status once its output has ended, or None if it does not come within `timeout_s`
    (paramiko's own `recv_exit_status` waits forever)."""
    return chan.recv_exit_status() if chan.status_event.wait(timeout_s) else None


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's form: SHA256:<base64 without padding>."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")


def host_entry(host: str, port: int) -> str:
    """How known_hosts names a host: `host` on port 22, `[host]:port` otherwise."""
    return host if port == 22 else f"[{host}]:{port}"


@dataclass(frozen=True)
class Result:
    rc: int
    out: str
    err: str


class _Policy:
    """Unknown key: refuse, or (when asked) record it in known_hosts and go on (paramiko calls `missing_host_key` on
    any object given as the policy)."""

    def __init__(self, label: str, known_hosts: Path, accept: bool, progress: Progress) -> None:
        self.label, self.known_hosts, self.accept, self.progress = label, known_hosts, accept, progress

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        fp = fingerprint(key)
        if not self.accept:
            raise HostKeyRefused(
                f"{self.label}: host key {key.get_name()} {fp} of {hostname} is not in {self.known_hosts}; "
                "compare the fingerprint with the host's own (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub) and "
                "add it to known_hosts, or run again with --accept-new-host-keys to accept and record it"
            )
        self.known_hosts.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.known_hosts, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as f:
            f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.progress(f"{self.label}: accepted new host key {key.get_name()} {fp}; recorded in {self.known_hosts}")


@dataclass(frozen=True)
class Target:
    """One host to reach: a label for messages ("broker 2 (10.0.0.2)"), its address and SSH settings."""

    label: str
    host: str
    ssh: Ssh

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.ssh.user, self.host, self.ssh.port)

    @classmethod
    def of(cls, inv: Inventory, entry: Broker | ClientHost) -> Target:
        """An inventory host, with its label and SSH settings (the defaults merged with its own)."""
        return cls(inv.label(entry), entry.host, inv.ssh_of(entry))


class SshPool:
    def __init__(self, *, accept_new_host_keys: bool = False, progress: Progress = print) -> None:
        self.accept = accept_new_host_keys
        self.progress = progress
        self._clients: dict[tuple[str, str, int], paramiko.SSHClient] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> SshPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def client(self, t: Target) -> paramiko.SSHClient:
        with self._lock:
            c = self._clients.get(t.key)
            transport = c.get_transport() if c is not None else None
            if c is not None and transport is not None and transport.is_active():
                return c
            c = self._connect(t)
            self._clients[t.key] = c
            return c

    def _connect(self, t: Target) -> paramiko.SSHClient:
        import paramiko

        s = t.ssh
        c = paramiko.SSHClient()
        kh = s.known_hosts_path
        if kh.exists():
            try:
                c.load_host_keys(str(kh))
            except (OSError, paramiko.SSHException) as e:
                raise EnvironmentProblem(f"{t.label}: cannot read known_hosts {kh}: {e}") from None
        c.set_missing_host_key_policy(_Policy(t.label, kh, self.accept, self.progress))
        where = f"{t.label}: ssh {s.user}@{t.host}:{s.port}"
        try:
            c.connect(
                t.host,
                port=s.port,
                username=s.user,
                key_filename=str(s.key_path) if s.key_path else None,
                passphrase=s.key_passphrase.reveal() if s.key_passphrase else None,
                allow_agent=s.agent,
                look_for_keys=False,
                timeout=s.connect_timeout_s,
                banner_timeout=s.connect_timeout_s,
                auth_timeout=s.connect_timeout_s,
            )
        except HostKeyRefused:
            c.close()
            raise
        except paramiko.BadHostKeyException as e:
            c.close()
            raise HostKeyRefused(
                f"{t.label}: host key of {host_entry(t.host, s.port)} CHANGED: it offers {e.key.get_name()} "
                f"{fingerprint(e.key)}, {kh} has {fingerprint(e.expected_key)}. Refusing (a reinstalled host or "
                "someone in the middle); if the change is expected, remove the old line "
                f"(ssh-keygen -R '{host_entry(t.host, s.port)}' -f {kh})"
            ) from None
        except paramiko.AuthenticationException:
            c.close()
            how = f"key {s.key_path}" if s.key_path else "the SSH agent"
            raise EnvironmentProblem(f"{where}: authentication with {how} failed") from None
        except TimeoutError:
            c.close()
            raise EnvironmentProblem(f"{where}: no answer within {s.connect_timeout_s:g} s") from None
        except (OSError, paramiko.SSHException) as e:
            c.close()
            raise EnvironmentProblem(f"{where}: {e}") from None
        return c

    def run(
        self, t: Target, command: str, *, timeout_s: float | None = None, check: bool = True, retry: bool = False
    ) -> Result:
        """Run `command` through the remote shell; with `check`, a non-zero exit is RemoteCommandFailed.

        `timeout_s` bounds the whole command: a watchdog closes the channel at the deadline, since paramiko waits
        without a timeout for a channel, for the server's reply to the exec request and for the exit status. A
        server that did not start the command in time leaves its connection suspect: it is dropped (the next
        command opens a new one), and with `retry` (a command safe to run twice, such as a read-only check) the
        command is tried once more on the new connection. A command that started and then overran is not retried."""
        limit = timeout_s or t.ssh.command_timeout_s
        try:
            return self._run_once(t, command, limit, check)
        except _Stalled as e:
            if not (e.unanswered and retry):
                raise RemoteCommandFailed(str(e)) from None
            self.progress(f"{e}; trying once more on a new connection")
        try:
            return self._run_once(t, command, limit, check)
        except _Stalled as e:
            raise RemoteCommandFailed(f"{e} (twice)") from None

    def start(self, t: Target, command: str, *, timeout_s: float = 30) -> paramiko.Channel:
        """A new channel to `t` with `command` started on it (the caller reads it and closes it). The server must
        start it within `timeout_s`: paramiko waits for that without a timeout, so a watchdog ends the wait (and
        drops the connection, which is then suspect)."""
        try:
            return self._start(t, command, timeout_s)
        except _Stalled as e:
            raise RemoteCommandFailed(str(e)) from None

    def _start(self, t: Target, command: str, limit: float) -> paramiko.Channel:
        import paramiko

        transport = self.client(t).get_transport()
        if transport is None:
            raise RemoteCommandFailed(f"{t.label}: the SSH connection closed")
        stage, chan = [_OPENING], list[paramiko.Channel]()

        def stop() -> None:
            if chan:
                chan[0].close()  # wakes the wait for the exec reply
            else:
                transport.close()  # no channel after all this time: the connection itself is stuck

        with _Watchdog(limit, stop) as dog:
            try:
                chan.append(transport.open_session())
                stage[0] = _STARTING
                chan[0].exec_command(command)
            except (OSError, EOFError, paramiko.SSHException) as e:  # EOFError: the transport's, once closed
                if chan:
                    chan[0].close()
                if not dog.fired.is_set():
                    raise RemoteCommandFailed(f"{t.label}: `{command}`: {e}") from None
        if dog.fired.is_set():
            if chan:
                chan[0].close()
            self.drop(t)
            raise _Stalled(f"{t.label}: `{command}` did not finish within {limit:g} s ({stage[0]})", True)
        return chan[0]

    def _run_once(self, t: Target, command: str, limit: float, check: bool) -> Result:
        import paramiko

        deadline = time.monotonic() + limit
        chan = self._start(t, command, limit)
        stage, at = ["reading its output"], []

        def stop() -> None:
            at.append(stage[0])  # the close below lets the waits go on to the next stage: say where it was
            chan.close()  # paramiko's wait for the exit status has no timeout: this ends it

        try:
            with _Watchdog(max(0.1, deadline - time.monotonic()), stop) as dog:
                chan.settimeout(limit)
                out = chan.makefile("rb").read().decode(errors="replace")
                err = chan.makefile_stderr("rb").read().decode(errors="replace")
                stage[0] = "waiting for its exit status"
                rc = chan.recv_exit_status()
        except (OSError, EOFError, paramiko.SSHException) as e:  # EOFError: the transport's, once closed
            if not (dog.fired.is_set() or isinstance(e, TimeoutError)):
                raise RemoteCommandFailed(f"{t.label}: `{command}`: {e}") from None
        finally:
            chan.close()
        if dog.fired.is_set() or stage[0] != "waiting for its exit status":
            where = at[0] if at else stage[0]
            raise _Stalled(f"{t.label}: `{command}` did not finish within {limit:g} s ({where})", False)
        if check and rc != 0:
            tail = (err.strip() or out.strip())[-500:]
            raise RemoteCommandFailed(f"{t.label}: `{command}` exited {rc}: {tail}")
        return Result(rc, out, err)

    def drop(self, t: Target) -> None:
        """Close the connection to `t` (if open); the next command opens a new one."""
        with self._lock:
            c = self._clients.pop(t.key, None)
        if c is not None:
            c.close()

    def sftp(self, t: Target) -> paramiko.SFTPClient:
        return self.client(t).open_sftp()

    def read_file(self, t: Target, path: str) -> str:
        with self.sftp(t) as sf, sf.open(path, "r") as f:
            data: bytes = f.read()
        return data.decode()

    def write_file(self, t: Target, path: str, text: str) -> None:
        """Replace `path` atomically (a temporary file beside it, then rename), keeping its mode."""
        tmp = f"{path}.kafkatune-tmp"
        with self.sftp(t) as sf:
            mode: Any = None
            with contextlib.suppress(OSError):
                mode = sf.stat(path).st_mode
            with sf.open(tmp, "w") as f:
                f.write(text.encode())
            if mode is not None:
                sf.chmod(tmp, mode & 0o7777)
            sf.posix_rename(tmp, path)

    def exists(self, t: Target, path: str, kind: str = "-e") -> bool:
        return self.run(t, f"test {kind} {shlex.quote(path)}", check=False, retry=True).rc == 0

    def close(self) -> None:
        with self._lock:
            for c in self._clients.values():
                c.close()
            self._clients.clear()
