#!/usr/bin/python3
"""Unwinds a live process through unwindd and prints it like `unwind pid`.

    unwind_process.py unix:/run/unwindd.sock PID [DIR_OF_unwinder_pb2]

Written only from proto/unwinder.proto, with Debian's python3-grpcio and
python3-protobuf. The messages come from protoc (no gRPC stub generator
needed; the method path names the RPC):

    protoc --proto_path=. --python_out=OUT proto/unwinder.proto
    # OUT/proto/unwinder_pb2.py

docs/service.md shows it; //tools/docs:client_examples_test runs it against
a real unwindd.
"""
import sys

import grpc

address, pid = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3] if len(sys.argv) > 3 else "proto")
import unwinder_pb2 as pb  # noqa: E402

channel = grpc.insecure_channel(address)
unwind_process = channel.unary_unary(
    "/unwindd.v1.Unwinder/UnwindProcess",
    request_serializer=pb.UnwindProcessRequest.SerializeToString,
    response_deserializer=pb.UnwindResponse.FromString)
try:
    response = unwind_process(pb.UnwindProcessRequest(pid=pid, max_frames=64), timeout=30)
except grpc.RpcError as e:
    sys.exit("unwindd: %s: %s" % (e.code().name, e.details()))

for thread in response.threads:
    print("TID %d:" % thread.tid)
    for i, frame in enumerate(thread.frames):
        where = ""
        if frame.HasField("module"):
            where = " %s+0x%x" % (response.modules[frame.module].path, frame.rel_pc)
        method = pb.Method.Name(frame.method)[len("METHOD_"):].lower()
        print("#%-2d 0x%016x%s [%s]" % (i, frame.pc, where, method))
    print("stop: %s" % pb.StopReason.Name(thread.stop)[len("STOP_REASON_"):].lower())
