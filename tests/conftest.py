"""Session-scoped real servers: one 3-node testbed shared by every test that needs Kafka."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from brokerconf import dist
from brokerconf.testbed import Testbed, TestbedState

TEST_BASE_PORT = int(os.environ.get("KAFKATUNE_TEST_BASE_PORT", "39090"))


@pytest.fixture(scope="session")
def kafka_dist() -> dist.KafkaDist:
    return dist.install()


@pytest.fixture(scope="session")
def testbed(tmp_path_factory: pytest.TempPathFactory, kafka_dist: dist.KafkaDist) -> Iterator[Testbed]:
    tb = Testbed(tmp_path_factory.mktemp("testbed"), kafka_dist, base_port=TEST_BASE_PORT, heap="768m")
    tb.down(wipe=True, progress=lambda m: None)
    tb.state_dir.mkdir(parents=True, exist_ok=True)
    tb.up(progress=print)
    from kafkatune.warmup import warm_up

    warm_up(tb.state().bootstrap_servers, float(os.environ.get("KAFKATUNE_TEST_WARMUP_S", "40")))
    yield tb
    tb.down(wipe=True, progress=print)


@pytest.fixture()
def healthy(testbed: Testbed) -> TestbedState:
    """The testbed with all nodes up and every partition in sync (a previous test may have killed one)."""
    testbed.up(progress=print)
    from brokerconf import admin

    admin.wait_full_isr(admin.admin_client(testbed.state().bootstrap_servers), timeout_s=180)
    return testbed.state()


@pytest.fixture()
def unique() -> str:
    return uuid.uuid4().hex[:8]


REPO = Path(__file__).resolve().parent.parent
