"""Cluster inventories and SSH against a real OpenSSH server: validation, host-key checks, remote commands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paramiko
import pytest
import yaml

from cluster.inventory import load_inventory
from cluster.ssh import HostKeyRefused, RemoteCommandFailed, SshPool, Target
from tests.helpers import kafkatune
from tests.sshd import Sshd, fingerprint_of, keygen, start_sshd


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    s = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield s
    s.stop()


def inventory(tmp_path: Path, sshd: Sshd, known_hosts: Path, **over: Any) -> Path:
    """A one-broker, one-client inventory of the test sshd; `over` replaces top-level fields."""
    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\nnum.replica.fetchers=1\n")
    (tmp_path / "data").mkdir(exist_ok=True)
    inv: dict[str, Any] = {
        "name": "remote-test",
        "bootstrap": "127.0.0.1:9092",
        "ssh": {"port": sshd.port, "key_file": str(sshd.client_key), "known_hosts": str(known_hosts)},
        "brokers": [
            {
                "id": 1,
                "host": "127.0.0.1",
                "server_properties": str(props),
                "restart": "true",
                "log_dirs": [str(tmp_path / "data")],
            }
        ],
        "clients": [{"host": "127.0.0.1", "python": sys.executable}],  # an interpreter with kafkatune
    }
    inv.update(over)
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(inv))
    return path


def known_line(sshd: Sshd) -> str:
    kind, b64 = sshd.host_pub.read_text().split()[:2]
    return f"[127.0.0.1]:{sshd.port} {kind} {b64}"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"security": {"protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "username": "u", "password": "hunter2x"}},
            "security.password: secrets are given by reference",
        ),
        ({"security": {"protocol": "SASL_SSL", "username": "u", "password": {"env": "X"}}}, "needs sasl_mechanism"),
        (
            {
                "security": {
                    "protocol": "SASL_PLAINTEXT",
                    "sasl_mechanism": "SCRAM-SHA-512",
                    "username": "u",
                    "password": {"env": "KT_TEST_UNSET_PASSWORD"},
                }
            },
            "security.password: environment variable KT_TEST_UNSET_PASSWORD is not set",
        ),
        ({"security": {"protocol": "PLAINTEXT", "username": "u"}}, "username: only for protocol SASL"),
        ({"bootstrap": "nohostport"}, "bootstrap: 'nohostport' is not host:port"),
        ({"brokers": []}, "brokers: List should have at least 1 item"),
        (
            {
                "brokers": [
                    {
                        "id": 1,
                        "host": "h",
                        "server_properties": "rel/server.properties",
                        "restart": "x",
                        "log_dirs": ["/d"],
                    }
                ]
            },
            "brokers.0.server_properties",
        ),
        (
            {
                "brokers": [
                    {"id": 1, "host": "h", "server_properties": "/a", "restart": "x", "log_dirs": ["/d"]},
                    {"id": 1, "host": "h2", "server_properties": "/a", "restart": "x", "log_dirs": ["/d"]},
                ]
            },
            "broker id 1 appears more than once",
        ),
        ({"ssh": {"key_file": "/nonexistent/key"}}, "ssh.key_file: /nonexistent/key does not exist"),
        ({"ssh": {"port": 70000, "key_file": "/k"}}, "ssh.port"),
        ({"sssh": {}}, "sssh: unknown field"),
    ],
)
def test_a_bad_inventory_names_the_field_and_contacts_no_host(
    tmp_path: Path, sshd: Sshd, change: dict[str, Any], message: str
) -> None:
    kh = tmp_path / "known_hosts"
    proc = kafkatune("hosts", "check", str(inventory(tmp_path, sshd, kh, **change)), env={"KT_TEST_UNSET_PASSWORD": ""})
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert "hunter2x" not in proc.stderr + proc.stdout  # a secret typed inline is not echoed back
    assert not kh.exists()  # no host was contacted


def test_an_unknown_host_key_is_refused_with_its_fingerprint(tmp_path: Path, sshd: Sshd) -> None:
    kh = tmp_path / "known_hosts"
    proc = kafkatune("hosts", "check", str(inventory(tmp_path, sshd, kh)))
    assert proc.returncode == 3, proc.stderr
    assert "not in" in proc.stderr and "--accept-new-host-keys" in proc.stderr, proc.stderr
    assert fingerprint_of(sshd.host_pub) in proc.stderr  # the same fingerprint OpenSSH shows
    assert not kh.exists()  # nothing recorded without the flag


def test_accepting_a_new_host_key_records_it_and_it_is_trusted_from_then_on(tmp_path: Path, sshd: Sshd) -> None:
    kh = tmp_path / "known_hosts"
    inv = inventory(tmp_path, sshd, kh)
    proc = kafkatune("hosts", "check", str(inv), "--accept-new-host-keys", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "accepted new host key" in proc.stderr and fingerprint_of(sshd.host_pub) in proc.stderr
    assert kh.read_text().splitlines() == [known_line(sshd)]
    assert kh.stat().st_mode & 0o077 == 0
    rows = json.loads(proc.stdout)["hosts"]
    assert [r["ok"] for r in rows] == [True, True] and rows[1]["python"].startswith("Python 3")
    again = kafkatune("hosts", "check", str(inv))  # no flag: the recorded key is trusted
    assert again.returncode == 0, again.stderr
    assert kh.read_text().splitlines() == [known_line(sshd)]


def test_a_changed_host_key_is_refused_even_with_the_flag(tmp_path: Path, sshd: Sshd) -> None:
    other = keygen(tmp_path / "other_host_key")
    kind, b64 = other.with_name("other_host_key.pub").read_text().split()[:2]
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{sshd.port} {kind} {b64}\n")
    before = kh.read_text()
    proc = kafkatune("hosts", "check", str(inventory(tmp_path, sshd, kh)), "--accept-new-host-keys")
    assert proc.returncode == 3, proc.stderr
    assert "CHANGED" in proc.stderr and fingerprint_of(sshd.host_pub) in proc.stderr, proc.stderr
    assert kh.read_text() == before


def test_missing_files_on_a_host_are_reported_per_host(tmp_path: Path, sshd: Sshd) -> None:
    kh = tmp_path / "known_hosts"
    kh.write_text(known_line(sshd) + "\n")
    broker = {
        "id": 7,
        "host": "127.0.0.1",
        "server_properties": str(tmp_path / "absent.properties"),
        "restart": "true",
        "log_dirs": [str(tmp_path / "no-such-dir")],
    }
    inv = inventory(tmp_path, sshd, kh, brokers=[broker], clients=[{"host": "127.0.0.1", "python": "no-python-here"}])
    proc = kafkatune("hosts", "check", str(inv), "--json")
    assert proc.returncode == 3, proc.stderr
    rows = {r["host"]: r for r in json.loads(proc.stdout)["hosts"]}
    b = rows["broker 7 (127.0.0.1)"]
    assert not b["ok"] and any("absent.properties is not readable" in p for p in b["problems"])
    assert any("no-such-dir is not a directory" in p for p in b["problems"])
    assert not rows["client 127.0.0.1"]["ok"] and "no-python-here" in rows["client 127.0.0.1"]["problems"][0]


def test_a_client_python_without_kafkatune_is_reported(tmp_path: Path, sshd: Sshd) -> None:
    """A Python runs there but cannot import kafkatune's load workers: said before any run needs them."""
    import shutil

    bare = shutil.which("python3", path="/usr/bin")  # Debian's own interpreter: no kafkatune installed
    assert bare is not None
    kh = tmp_path / "known_hosts"
    kh.write_text(known_line(sshd) + "\n")
    inv = inventory(tmp_path, sshd, kh, clients=[{"host": "127.0.0.1", "python": bare}])
    proc = kafkatune("hosts", "check", str(inv), "--json")
    assert proc.returncode == 3, proc.stderr
    client = {r["host"]: r for r in json.loads(proc.stdout)["hosts"]}["client 127.0.0.1"]
    assert client["python"].startswith("Python 3") and not client["ok"]
    assert "cannot run kafkatune's load workers" in client["problems"][0]


def _broker_target(tmp_path: Path, sshd: Sshd) -> Target:
    """The test inventory's broker, its host key already known."""
    kh = tmp_path / "known_hosts"
    kh.write_text(known_line(sshd) + "\n")
    inv = load_inventory(inventory(tmp_path, sshd, kh))
    return Target("broker 1", "127.0.0.1", inv.ssh_of(inv.brokers[0]))


def test_commands_and_files_over_one_reused_connection(tmp_path: Path, sshd: Sshd) -> None:
    t = _broker_target(tmp_path, sshd)
    with SshPool(progress=print) as pool:
        assert pool.run(t, "echo hello; echo err >&2").out == "hello\n"
        first = pool.client(t)
        with pytest.raises(RemoteCommandFailed, match=r"broker 1: `exit 3` exited 3"):
            pool.run(t, "exit 3")
        assert pool.run(t, "exit 5", check=False).rc == 5
        with pytest.raises(RemoteCommandFailed, match=r"did not finish within 1 s \(reading its output\)$"):
            pool.run(t, "sleep 30", timeout_s=1)
        props = str(tmp_path / "server.properties")  # the inventory's broker's
        Path(props).chmod(0o640)
        assert pool.read_file(t, props).startswith("broker.id=1")
        pool.write_file(t, props, "broker.id=1\nnum.replica.fetchers=4\n")
        assert Path(props).read_text().endswith("num.replica.fetchers=4\n")
        assert Path(props).stat().st_mode & 0o777 == 0o640  # mode kept
        assert not Path(props + ".kafkatune-tmp").exists()
        assert pool.client(t) is first  # one connection for all of it


def test_a_command_that_closes_its_output_and_hangs_still_meets_its_deadline(tmp_path: Path, sshd: Sshd) -> None:
    """Its output ends at once but its exit status never comes: paramiko waits for that status without a timeout,
    so the deadline holds only through the pool's watchdog. The command did start: no second try, and the
    connection is kept."""
    t = _broker_target(tmp_path, sshd)
    said: list[str] = []
    with SshPool(progress=said.append) as pool:
        first = pool.client(t)
        start = time.monotonic()
        with pytest.raises(RemoteCommandFailed, match=r"did not finish within 2 s \(waiting for its exit status\)$"):
            pool.run(t, "exec >/dev/null 2>&1 </dev/null; sleep 40", timeout_s=2, retry=True)
        assert time.monotonic() - start < 15 and not said
        assert pool.run(t, "echo again").out == "again\n" and pool.client(t) is first


def _session_processes(sshd: Sshd) -> set[int]:
    """The server's per-connection processes (every descendant of the listening sshd)."""
    found, todo = set(), [sshd.proc.pid]
    while todo:
        kids = subprocess.run(["pgrep", "-P", str(todo.pop())], capture_output=True, text=True).stdout.split()
        found.update(int(k) for k in kids)
        todo += kids
    return found


def test_a_server_that_stops_answering_is_left_and_a_check_is_tried_again_on_a_new_connection(
    tmp_path: Path, sshd: Sshd
) -> None:
    """The server's processes for the pool's connection are stopped (SIGSTOP): a channel is never opened, a wait
    paramiko makes without a timeout (a hang of `hosts check` in CI sat in such a wait for 600 s). The watchdog
    closes the connection at the deadline; a read-only check (`retry`) runs again on a new one and succeeds, any
    other command fails naming the stage."""
    t = _broker_target(tmp_path, sshd)
    said: list[str] = []
    with SshPool(progress=said.append) as pool:
        for retry in (True, False):
            pool.drop(t)
            before = _session_processes(sshd)
            pool.run(t, "true")  # a new connection, with its server processes
            stuck = _session_processes(sshd) - before
            assert stuck, "no server process for the connection"
            for pid in stuck:
                os.kill(pid, signal.SIGSTOP)
            try:
                start = time.monotonic()
                if retry:
                    assert pool.run(t, "uname -n", timeout_s=2, retry=True).out.strip()
                    assert any("(opening a channel); trying once more on a new connection" in s for s in said), said
                else:
                    with pytest.raises(RemoteCommandFailed, match=r"within 2 s \(opening a channel\)$"):
                        pool.run(t, "uname -n", timeout_s=2)
                assert time.monotonic() - start < 20
            finally:
                for pid in stuck:
                    os.kill(pid, signal.SIGKILL)


def test_a_wrong_key_is_an_authentication_error_naming_the_host(tmp_path: Path, sshd: Sshd) -> None:
    kh = tmp_path / "known_hosts"
    kh.write_text(known_line(sshd) + "\n")
    stranger = keygen(tmp_path / "stranger")
    inv = load_inventory(inventory(tmp_path, sshd, kh, ssh={**_ssh(sshd, kh), "key_file": str(stranger)}))
    with SshPool() as pool, pytest.raises(Exception, match=r"broker 1: ssh .*@127.0.0.1:\d+: authentication"):
        pool.run(Target("broker 1", "127.0.0.1", inv.ssh_of(inv.brokers[0])), "true")
    assert not issubclass(HostKeyRefused, paramiko.SSHException)


def _ssh(sshd: Sshd, kh: Path) -> dict[str, Any]:
    return {"port": sshd.port, "key_file": str(sshd.client_key), "known_hosts": str(kh)}


def test_worker_messages_cross_the_ssh_channel_unchanged() -> None:
    """The remote workers' codec: JSON lines, no pickle; bytes and integer-keyed maps come back as they were."""
    from loadgen.wire import decode, encode

    done = (
        "done",
        "consumer",
        3,
        {"received": 5, "seen": {0: b"\x01\x00\x02", 7: bytes(range(256))}, "e2e_hist": None, "errors": 0},
    )
    line = encode(["q", done])
    assert "\n" not in line and "pickle" not in line
    kind, body = decode(line)
    assert kind == "q" and tuple(body) == done
