"""A Zenoh router: one Python session in `mode: router` (`python -m testbed.zenoh_router --listen …`).

Started by `kafkatune servers up zenoh`; stops cleanly on SIGTERM or SIGINT (the session is closed).
"""

from __future__ import annotations

import argparse
import json
import signal
import threading


def main() -> None:
    import zenoh

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--listen", default="tcp/127.0.0.1:7447", help="endpoint, e.g. tcp/127.0.0.1:7447")
    a = ap.parse_args()
    cfg = zenoh.Config()
    cfg.insert_json5("mode", '"router"')
    cfg.insert_json5("listen/endpoints", json.dumps([a.listen]))
    cfg.insert_json5("scouting/multicast/enabled", "false")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    session = zenoh.open(cfg)
    print(f"zenoh router {session.zid()} listening on {a.listen}", flush=True)
    try:
        stop.wait()
    finally:
        session.close()


if __name__ == "__main__":
    main()
