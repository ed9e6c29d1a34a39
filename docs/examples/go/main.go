// Unwinds a live process through unwindd and prints it like `unwind pid`.
//
//	go run . unix:/run/unwindd.sock PID
//
// Illustrative: it needs the Go gRPC module (google.golang.org/grpc) and
// Go code generated from proto/unwinder.proto, which this repository does
// not build (no network in its build):
//
//	protoc --proto_path=. --go_out=. --go-grpc_out=. \
//	    --go_opt=Munwinder.proto=example/unwindv1 proto/unwinder.proto
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "example/unwindv1"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: main unix:/run/unwindd.sock PID")
		os.Exit(2)
	}
	pid, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad PID:", os.Args[2])
		os.Exit(2)
	}
	conn, err := grpc.Dial(os.Args[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := pb.NewUnwinderClient(conn).UnwindProcess(ctx,
		&pb.UnwindProcessRequest{Pid: int32(pid), MaxFrames: 64})
	if err != nil {
		fmt.Fprintln(os.Stderr, "unwindd:", err)
		os.Exit(1)
	}
	for _, t := range resp.Threads {
		fmt.Printf("TID %d:\n", t.Tid)
		for i, f := range t.Frames {
			where := ""
			if f.Module != nil {
				where = fmt.Sprintf(" %s+0x%x", resp.Modules[*f.Module].Path, f.RelPc)
			}
			method := strings.ToLower(strings.TrimPrefix(f.Method.String(), "METHOD_"))
			fmt.Printf("#%-2d 0x%016x%s [%s]\n", i, f.Pc, where, method)
		}
		fmt.Println("stop:", strings.ToLower(strings.TrimPrefix(t.Stop.String(), "STOP_REASON_")))
	}
}
