// A Go program whose CPU profile carries pprof labels, for
// test-import-labels.sh: pprof.Do runs handler "a" for three times the
// CPU time of handler "b" (by the thread's own CPU clock, the goroutine
// locked to its thread, so the shares hold on a loaded machine), each
// also labelled with a route under the key
// "Http.Route" (not a valid flamefs label key as it is).  With the
// argument "collide" it labels with "Handler" and "handler" instead,
// two keys that map to one label key.
//   usage: go-labels OUT.pb.gz [collide]
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"
)

// threadCPU is the calling thread's CPU time (RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var sink uint64

//go:noinline
func burnA(d time.Duration) {
	end := threadCPU() + d
	for threadCPU() < end {
		for i := 0; i < 100000; i++ {
			sink += uint64(i) * 7
		}
	}
}

//go:noinline
func burnB(d time.Duration) {
	end := threadCPU() + d
	for threadCPU() < end {
		for i := 0; i < 100000; i++ {
			sink += uint64(i) * 11
		}
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go-labels OUT.pb.gz [collide]")
		os.Exit(2)
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runtime.LockOSThread()
	ctx := context.Background()
	if len(os.Args) > 2 && os.Args[2] == "collide" {
		pprof.Do(ctx, pprof.Labels("Handler", "a"), func(context.Context) { burnA(300 * time.Millisecond) })
		pprof.Do(ctx, pprof.Labels("handler", "b"), func(context.Context) { burnB(300 * time.Millisecond) })
	} else {
		pprof.Do(ctx, pprof.Labels("handler", "a", "Http.Route", "/api/a"), func(context.Context) {
			burnA(900 * time.Millisecond)
		})
		pprof.Do(ctx, pprof.Labels("handler", "b", "Http.Route", "/api/b"), func(context.Context) {
			burnB(300 * time.Millisecond)
		})
	}
	pprof.StopCPUProfile()
	f.Close()
}
