"""A client driver that speaks the client-driver protocol and misbehaves on purpose.

Run as ``python fake_client_driver.py MODE``. MODE decides how it answers hello:
``ok`` (protocol 1), ``wrong-version`` (protocol 2), ``refuse`` (an "error" answer), ``silent``
(never answers), ``crash-at-start`` (exits before reading anything).

After hello, ``client.get_partitions`` answers by the topic's local name (the part after the last
/): ``crash`` exits mid-request, ``hang`` starts a grandchild process (its pid written to stderr)
and never answers, ``garbage`` writes a line that is not JSON, ``wrong-id`` answers another id,
``raise`` answers "raised" with a Java client exception, ``unsupported`` and ``error`` answer
those; any other name answers ``[topic]``, as a client does for a non-partitioned topic. A
request naming a client handle this process never made (or closed) is an "error", as the real
drivers answer it.
"""

import json
import subprocess
import sys
import tempfile
import time


def answer(request_id, **body):
    sys.stdout.write(json.dumps({"id": request_id, **body}) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    if mode == "crash-at-start":
        sys.exit(7)
    handles = 0
    open_handles = set()
    for line in sys.stdin:
        request = json.loads(line)
        rid, cmd, args = request["id"], request["cmd"], request.get("args", {})
        if cmd == "hello":
            if mode == "keeps-files":
                with tempfile.NamedTemporaryFile(prefix="unpacked-", delete=False) as kept:
                    kept.write(b"what a client library unpacks")
            if mode == "silent":
                time.sleep(600)
            if mode == "refuse":
                answer(rid, error="protocol 1 is not spoken here")
                continue
            answer(rid, ok={"protocol": 2 if mode == "wrong-version" else 1, "driver": "fake", "language": "python",
                            "library": "none", "library_version": "0", "commands": ["hello", "noop"]})
        elif cmd == "close" and args.get("handle") not in open_handles:
            answer(rid, error=f"close: no open handle {args.get('handle')}")
        elif cmd in ("noop", "close", "reset"):
            open_handles.discard(args.get("handle"))
            answer(rid, ok={"closed": 0} if cmd == "reset" else {})
        elif cmd == "shutdown":
            answer(rid, ok={})
            return
        elif cmd == "client.create":
            handles += 1
            open_handles.add(f"c{handles}")
            answer(rid, ok={"handle": f"c{handles}"})
        elif cmd == "client.get_partitions" and args.get("client") not in open_handles:
            answer(rid, error=f"client.get_partitions: no open handle {args.get('client')}")
        elif cmd == "client.get_partitions":
            name = args["topic"].rsplit("/", 1)[-1]
            if name == "crash":
                print("fake driver: crashing as asked", file=sys.stderr, flush=True)
                sys.exit(3)
            if name == "hang":
                child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
                print(f"grandchild {child.pid}", file=sys.stderr, flush=True)
                time.sleep(600)
            if name == "garbage":
                sys.stdout.write("this is not JSON\n")
                sys.stdout.flush()
            elif name == "wrong-id":
                answer(rid + 100, ok={"topics": []})
            elif name == "raise":
                answer(rid, raised={"class": "org.apache.pulsar.client.api.PulsarClientException$TopicDoesNotExistException",
                                    "message": "topic does not exist", "causes": []})
            elif name == "unsupported":
                answer(rid, unsupported="this fake has no such method")
            elif name == "error":
                answer(rid, error="client.get_partitions: argument \"topic\" must be a string")
            else:
                answer(rid, ok={"topics": [args["topic"]]})
        else:
            answer(rid, error=f"unknown command {cmd}")


if __name__ == "__main__":
    main()
