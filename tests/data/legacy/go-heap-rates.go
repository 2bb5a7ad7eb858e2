// Writes Go heap profiles in the legacy text form (debug=1) with the
// default runtime.MemProfileRate (header "@ heap/1048576"): small, medium
// and large allocations, some kept and some freed.
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

var keep [][]byte

//go:noinline
func allocSmall(n, size int) {
	for i := 0; i < n; i++ {
		b := make([]byte, size)
		if i%3 == 0 {
			keep = append(keep, b)
		}
	}
}

//go:noinline
func allocMedium(n int) {
	for i := 0; i < n; i++ {
		b := make([]byte, 64<<10)
		if i%2 == 0 {
			keep = append(keep, b)
		}
	}
}

//go:noinline
func allocLarge(n int) {
	for i := 0; i < n; i++ {
		b := make([]byte, 4<<20)
		b[0] = 1
		if i%4 == 0 {
			keep = append(keep, b)
		}
	}
}

func write(file string) {
	runtime.GC()
	f, err := os.Create(file)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 1); err != nil {
		panic(err)
	}
}

func main() {
	allocSmall(200000, 64)
	write("go-heap-small.txt")
	allocMedium(2000)
	write("go-heap-medium.txt")
	allocLarge(200)
	write("go-heap-large.txt")
}
