#!/usr/bin/python3
"""An independent unwindd client: Debian's python3-grpcio and python3-protobuf
(messages from protoc --python_out, no gRPC stub generator), written only
from proto/unwinder.proto.

It reads samples a test captured (a serialized SnapshotBatch whose samples
carry their own mappings, the old way), sends the mapping table ONCE as a
MappingTable and then only the samples, naming the table by id, on both
streaming RPCs, and checks every sample's frames against what
`unwind pid PID --format=json` printed for the same threads.

  snapshot_client.py --socket=DIR/unwindd.sock --samples=samples.bin \
      --cli-json=cli.json --pb2-dir=RUNFILES/service/server/python

Or over TLS with a client certificate (unwindd --tls-*), through
grpc.ssl_channel_credentials:

  snapshot_client.py --target=127.0.0.1:PORT --tls-ca=ca.pem \
      --tls-cert=me.pem --tls-key=me.key --samples=... --cli-json=... --pb2-dir=...

Exits 0 and prints "matched N threads (F frames) ..." when every thread of
the CLI's output was answered with the same frames on both RPCs; 1 with
the differences otherwise.
"""
import argparse
import json
import sys

import grpc

TABLE_ID = 42


def method_name(pb, value):
    # METHOD_EH_FRAME -> "eh_frame": the CLI's names (proto comment).
    return pb.Method.Name(value)[len("METHOD_"):].lower()


def stop_name(pb, value):
    return pb.StopReason.Name(value)[len("STOP_REASON_"):].lower()


def frames_like_cli(pb, response):
    """The response's frames with the fields the CLI's JSON prints."""
    out = []
    for f in response.stack.frames:
        frame = {"pc": f.pc, "sp": f.sp, "method": method_name(pb, f.method)}
        if f.HasField("module"):
            m = response.modules[f.module]
            frame["module"] = m.path
            frame["build_id"] = m.build_id
            if not m.load_bias_unknown:
                frame["rel_pc"] = f.rel_pc
            frame["file_offset"] = f.file_offset
        out.append(frame)
    return out


def cli_frames(thread):
    out = []
    for f in thread["frames"]:
        frame = {"pc": int(f["pc"], 16), "sp": int(f["sp"], 16), "method": f["method"]}
        if "module" in f:
            frame["module"] = f["module"]
            frame["build_id"] = f["build_id"]
            if "rel_pc" in f:
                frame["rel_pc"] = int(f["rel_pc"], 16)
            frame["file_offset"] = int(f["file_offset"], 16)
        out.append(frame)
    return out


def requests_by_table(pb, captured):
    """The samples naming table TABLE_ID, and that table."""
    table = pb.MappingTable(id=TABLE_ID)
    table.mappings.extend(captured.samples[0].mappings)
    samples = []
    for s in captured.samples:
        r = pb.SnapshotRequest()
        r.CopyFrom(s)
        r.ClearField("mappings")
        r.mapping_table_id = TABLE_ID
        samples.append(r)
    return table, samples


def via_batches(pb, channel, table, samples):
    call = channel.stream_stream(
        "/unwindd.v1.Unwinder/UnwindSnapshotBatches",
        request_serializer=pb.SnapshotBatch.SerializeToString,
        response_deserializer=pb.SnapshotBatchResponse.FromString)

    def batches():
        # The table alone first (answered by an empty batch), then the
        # samples two to a message.
        yield pb.SnapshotBatch(mapping_tables=[table])
        for i in range(0, len(samples), 2):
            yield pb.SnapshotBatch(samples=samples[i:i + 2])

    return [r for batch in call(batches(), timeout=60) for r in batch.responses]


def via_single(pb, channel, table, samples):
    call = channel.stream_stream(
        "/unwindd.v1.Unwinder/UnwindSnapshots",
        request_serializer=pb.SnapshotRequest.SerializeToString,
        response_deserializer=pb.SnapshotResponse.FromString)
    first = pb.SnapshotRequest()
    first.CopyFrom(samples[0])
    first.mapping_table.CopyFrom(table)  # carried by the first sample only
    return list(call(iter([first] + samples[1:]), timeout=60))


def compare(pb, rpc, responses, cli, problems):
    by_tid = {}
    for r in responses:
        if r.HasField("error"):
            problems.append("%s: sample %d: error %d %s" %
                            (rpc, r.sample_id, r.error.code, r.error.message))
            continue
        by_tid[r.stack.tid] = r
    frames = 0
    for thread in cli["threads"]:
        r = by_tid.get(thread["tid"])
        if r is None:
            problems.append("%s: no answer for thread %d" % (rpc, thread["tid"]))
            continue
        want, got = cli_frames(thread), frames_like_cli(pb, r)
        if want != got:
            problems.append("%s: thread %d differs:\n  cli %s\n  got %s" %
                            (rpc, thread["tid"], want, got))
        if stop_name(pb, r.stack.stop) != thread["stop"]:
            problems.append("%s: thread %d stops with %s, the CLI's with %s" %
                            (rpc, thread["tid"], stop_name(pb, r.stack.stop),
                             thread["stop"]))
        frames += len(got)
    return frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket")
    ap.add_argument("--target")
    ap.add_argument("--tls-ca")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--samples", required=True)
    ap.add_argument("--cli-json", required=True)
    ap.add_argument("--pb2-dir", required=True)
    args = ap.parse_args()
    sys.path.insert(0, args.pb2_dir)
    from proto import unwinder_pb2 as pb  # generated by protoc --python_out

    with open(args.samples, "rb") as f:
        captured = pb.SnapshotBatch.FromString(f.read())
    with open(args.cli_json) as f:
        cli = json.load(f)
    if not captured.samples or not cli["threads"]:
        print("nothing to compare", file=sys.stderr)
        return 1
    table, samples = requests_by_table(pb, captured)
    problems = []
    if args.tls_ca:
        def read(path):
            with open(path, "rb") as f:
                return f.read()
        credentials = grpc.ssl_channel_credentials(
            root_certificates=read(args.tls_ca),
            private_key=read(args.tls_key) if args.tls_key else None,
            certificate_chain=read(args.tls_cert) if args.tls_cert else None)
        channel = grpc.secure_channel(args.target, credentials)
    elif args.target:
        channel = grpc.insecure_channel(args.target)
    else:
        channel = grpc.insecure_channel("unix:" + args.socket)
    with channel:
        frames = compare(pb, "UnwindSnapshotBatches",
                         via_batches(pb, channel, table, samples), cli, problems)
        frames += compare(pb, "UnwindSnapshots",
                          via_single(pb, channel, table, samples), cli, problems)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print("matched %d threads (%d frames) on UnwindSnapshotBatches and "
          "UnwindSnapshots, table %d sent once" % (len(cli["threads"]), frames, TABLE_ID))
    return 0


if __name__ == "__main__":
    sys.exit(main())
