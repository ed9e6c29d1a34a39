// corpus_go: a CPU-bound Go program for the benchmark corpus
// (testdata/bench/compare.sh, section "corpus"): GOROUTINES goroutines,
// each recursing to a varying depth and sorting at the bottom with
// sort.Slice and a closure. Go's own stacks (growable, switched by the
// runtime), its frame pointers and its .debug_frame are what a profiler
// meets in Go programs.
//
//	corpus_go GOROUTINES DEPTH
//
// Prints "ready" once every goroutine runs, then runs until killed.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync/atomic"
)

var sink uint64
var started int32

//go:noinline
func bottom(seed *uint32) uint64 {
	v := make([]int, 256)
	for i := range v {
		*seed = *seed*1664525 + 1013904223
		v[i] = int(*seed >> 8)
	}
	sort.Slice(v, func(a, b int) bool { return v[a] < v[b] })
	return uint64(v[7])
}

//go:noinline
func recurse(depth int, seed *uint32) uint64 {
	var pad [8]uint64
	pad[depth%8] = uint64(depth)
	if depth <= 0 {
		return bottom(seed) ^ pad[0]
	}
	return recurse(depth-1, seed) ^ pad[depth%8]
}

func run(id int, depth int) {
	seed := uint32(id)*2654435761 + 3
	atomic.AddInt32(&started, 1)
	for {
		d := depth/2 + int(seed%uint32(depth/2+1))
		atomic.AddUint64(&sink, recurse(d, &seed))
	}
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: corpus_go GOROUTINES DEPTH")
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Args[1])
	depth, _ := strconv.Atoi(os.Args[2])
	if n < 1 || depth < 1 {
		os.Exit(2)
	}
	for i := 0; i < n; i++ {
		go run(i, depth)
	}
	for atomic.LoadInt32(&started) != int32(n) {
	}
	fmt.Println("ready")
	select {}
}
