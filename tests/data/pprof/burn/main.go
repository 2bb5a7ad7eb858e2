// Command burn is the flamefs pprof test fixture: it spins in two known
// functions, main.hot for about three times as long as main.cold, while
// runtime/pprof records a CPU profile, and writes it to the file named
// by its first argument (default cpu.pb.gz).
//
// Regenerate tests/data/pprof/cpu.pb.gz with:
//
//	cd tests/data/pprof/burn && d=$(mktemp -d) &&
//	    GO111MODULE=off GOCACHE=$d HOME=$d go build -trimpath -o $d/burn main.go &&
//	    $d/burn ../cpu.pb.gz
//
// The binary is named burn so that the profile's first mapping, and so the
// flamefs series, is called burn.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

var sink uint64

// step is small enough for the compiler to inline into spin, so the
// profile has locations with an inlined line (main.step_[i] when folded).
func step(x uint64) uint64 {
	return x*6364136223846793005 + 1442695040888963407
}

// spin burns CPU until the deadline; it is kept out of line so that it
// shows up as its own frame below hot and cold.
//
//go:noinline
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := sink
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = step(x)
		}
	}
	sink = x
}

//go:noinline
func hot() { spin(30 * time.Millisecond) }

//go:noinline
func cold() { spin(10 * time.Millisecond) }

func main() {
	out := "cpu.pb.gz"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	f, err := os.Create(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "burn:", err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "burn:", err)
		os.Exit(1)
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		hot()
		cold()
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "burn:", err)
		os.Exit(1)
	}
}
