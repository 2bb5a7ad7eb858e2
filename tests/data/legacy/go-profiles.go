// Writes Go runtime/pprof profiles in the legacy text form (debug=1) and
// as protos, plus a delta allocs profile from net/http/pprof.
package main

import (
	"io"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

var keep [][]byte

//go:noinline
func allocSmall(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, 1024))
	}
}

//go:noinline
func allocBig(n int) {
	for i := 0; i < n; i++ {
		b := make([]byte, 1<<20)
		b[0] = 1
		if i%2 == 0 {
			keep = append(keep, b)
		}
	}
}

//go:noinline
func contend(mu *sync.Mutex, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := 0; i < 200; i++ {
		mu.Lock()
		time.Sleep(50 * time.Microsecond)
		mu.Unlock()
	}
}

func write(name string, debug int, file string) {
	f, err := os.Create(file)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if err := pprof.Lookup(name).WriteTo(f, debug); err != nil {
		panic(err)
	}
}

func main() {
	runtime.MemProfileRate = 4096
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	allocSmall(5000)
	allocBig(16)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go contend(&mu, &wg)
	}
	wg.Wait()
	runtime.GC()
	write("heap", 1, "heap.txt")
	write("heap", 0, "heap.pb.gz")
	write("allocs", 0, "allocs.pb.gz")
	write("goroutine", 1, "goroutine.txt")
	write("threadcreate", 1, "threadcreate.txt")
	write("mutex", 1, "mutex.txt")
	write("block", 1, "block.txt")

	// A delta profile, as /debug/pprof/allocs?seconds=N serves it: the
	// allocations during N seconds, with negative in-use values where
	// memory was freed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go http.Serve(ln, nil)
	go func() {
		time.Sleep(300 * time.Millisecond)
		keep = keep[:0]
		runtime.GC()
		allocSmall(3000)
		runtime.GC()
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/allocs?seconds=1")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	out, _ := os.Create("allocs-delta.pb.gz")
	io.Copy(out, resp.Body)
	out.Close()
}
