#!/usr/bin/env python3
"""Writes the protobuf fuzz targets' seeds from the real server's captured exchanges.

protobuf_list/<n>.bin and <n>-split.bin: each captured protobuf LIST body, whole (a leading zero
byte: no chunk lengths) and split 3, 17, 1, ... bytes at a time. protobuf_watch/<n>.bin: each
captured watch stream's chunks joined. sim_request_body/<n>.bin: each captured protobuf request
body, after the byte that picks the resource the target sends it to.

Run from the repository's root: python3 fuzz/seeds/make_protobuf_seeds.py
"""
import base64
import glob
import json
import os

EXCHANGES = "fixtures/real-apiserver/exchanges/"
SEEDS = "fuzz/seeds/"
# The order of KINDS in fuzz_targets/sim_request_body.rs.
PICK = {"ConfigMap": 0, "Pod": 1, "Job": 2, "Event": 3, "Namespace": 4}
LIMIT = 200_000  # bytes of base64: keep the seeds small


def main():
    for target in ("protobuf_list", "protobuf_watch", "sim_request_body"):
        os.makedirs(SEEDS + target, exist_ok=True)
    for path in sorted(glob.glob(EXCHANGES + "*.json")):
        number = os.path.basename(path).split("-")[0]
        # The kcm runs hold hundreds of exchanges; their single writes are captured apart.
        if not number.isdigit() or number in ("240", "288"):
            continue
        with open(path) as f:
            exchange = json.load(f)
        request, response = exchange.get("request", {}), exchange.get("response", {})
        envelope = response.get("envelope")
        body = response.get("body_base64")
        if isinstance(envelope, dict) and envelope.get("kind", "").endswith("List") and body and len(body) < LIMIT:
            raw = base64.b64decode(body)
            write(f"protobuf_list/{number}.bin", b"\x00" + raw)
            write(f"protobuf_list/{number}-split.bin", bytes([3, 17, 1, 0]) + raw)
        chunks = response.get("chunks_base64")
        if chunks:
            raw = b"".join(base64.b64decode(c) for c in chunks)
            if len(raw) < LIMIT:
                write(f"protobuf_watch/{number}.bin", b"\x00" + raw)
        if request.get("body_base64"):
            raw = base64.b64decode(request["body_base64"])
            kind = (request.get("envelope") or {}).get("kind", "")
            pick = 5 if "volcano" in request.get("path", "") else PICK.get(kind, 0)
            write(f"sim_request_body/{number}.bin", bytes([pick]) + raw)


def write(name, data):
    with open(SEEDS + name, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
